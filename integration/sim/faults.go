package sim

import (
	"time"
)

// fault is what goes wrong with a store request (or an effect).
type fault int

const (
	faultNone        fault = iota
	faultRefuse            // refused before applying: a 500, a connection refused
	faultThrottle          // throttled, not applied
	faultLost              // applied, the reply lost: the client sees a network error
	faultSlow              // slow past the caller's deadline; applied later, or never
	faultEffect            // the effect fails (returns an error)
	faultPanic             // the effect panics
	faultPanicAfter        // the remote effect panics after its call applied
	faultNotSent           // the remote call never leaves: a refused dial, a name that does not resolve
	faultOwnDeadline       // the remote call's own deadline, given a cause, passes: applied, or never
)

var faultNames = [...]string{"", "refused", "throttled", "reply lost", "slow", "effect error", "effect panic", "panic after applying", "never sent", "own deadline"}

func (f fault) String() string { return faultNames[f] }

// filler is a backend whose server can run out of memory.
type filler interface{ fillFor(d time.Duration) }

// decide is the scheduler's verdict for pt, drawn from the world's
// generator and the config's rates.
func (w *world) decide(pt *point) verdict {
	c := w.cfg
	var v verdict
	if w.calm.Load() {
		return v // the operator's turn, after the run: nothing goes wrong
	}
	if p := pt.proc; p != nil && pt.kind != kindWorld {
		switch x := w.rng.Float64(); {
		case x < c.PCrash:
			v.crash, v.after = true, w.rng.IntN(2) == 0
		case x < c.PCrash+c.PFreeze:
			v.freeze = pick(w.rng, c.Margin/2, c.Margin+time.Millisecond, c.Timeout/2, c.Timeout+c.Margin, 3*c.Timeout)
		}
		// Drawn only where it can happen, so that the draws of the
		// schedules without it stay as they were.
		v.cancel = c.PCancel > 0 && w.rng.Float64() < c.PCancel
	}
	switch pt.kind {
	case kindRequest:
		if c.PReceiptHang > 0 && w.check.receiptWrite(pt.actor) && w.rng.Float64() < c.PReceiptHang {
			// A receipt write that hangs until its caller's deadline:
			// the cheapest way to many receipts owed at once.
			v.fault, v.never = faultSlow, true
			return v
		}
		switch x := w.rng.Float64(); {
		case x < c.PFail:
			v.fault = faultRefuse
		case x < c.PFail+c.PThrottle:
			v.fault = faultThrottle
		case x < c.PFail+c.PThrottle+c.PLost:
			v.fault = faultLost
		case x < c.PFail+c.PThrottle+c.PLost+c.PSlow:
			v.fault = faultSlow
			v.delay = pick(w.rng, 50*time.Millisecond, c.Margin, c.Timeout, 2*c.Timeout) + time.Duration(w.rng.IntN(1000))
			v.never = w.rng.IntN(3) == 0
		}
		if full, ok := w.store.(filler); ok && c.POOM > 0 && w.rng.Float64() < c.POOM {
			full.fillFor(pick(w.rng, time.Second, c.Timeout, 3*c.Timeout))
		}
	case kindEffect:
		switch x := w.rng.Float64(); {
		case x < c.PEffectErr*0.8:
			v.fault = faultEffect
		case x < c.PEffectErr:
			v.fault = faultPanic
		}
		if c.Remote && v.fault == faultNone {
			v = w.decideRemote(v)
		}
	case kindReconcile:
		v = w.decideReconcile(v)
	}
	return v
}

// jitter is the stores' backoff in the simulation: the default's shape
// (25 ms doubling to 400 ms) without its randomness, which would make a
// seed replay differently; a few odd nanoseconds keep retries from meeting
// other timers (deadlines, whole milliseconds) at the very same instant,
// where Go's select would choose at random.
func jitter(n int) time.Duration {
	d := 400 * time.Millisecond
	if n < 4 {
		d = 25 * time.Millisecond << n
	}
	return d/2 + 7 + time.Duration(n)
}
