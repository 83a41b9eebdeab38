package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// oracle is told everything that happens in a schedule and checks the
// invariants (invariants.go) as it goes and at the end.
type oracle struct {
	w *world

	mu         sync.Mutex
	violations []string
	doubles    map[string]int // allowed double effects, by cause
	stats      Stats

	attempts map[string]*attempt         // by lease (or commit) token
	current  map[string]string           // actor → token of its attempt in progress
	own      map[string]bool             // actor: its acquire found its own lease in the way
	sameInv  map[string]string           // actor: the holder it met runs in its own invocation, at the same time
	reported map[string]bool             // actor: its record was reported (its Guard calls are over)
	landed   map[string][]landedReceipt  // storage key → receipts written
	applied  map[string][]*attempt       // business key → attempts whose effect took place
	deaths   map[*process]time.Time      // when each dead process died
	freezes  map[*process][][2]time.Time // when each process was frozen
	skeyOf   map[string]string           // business key → storage key
	ghosts   map[string]int              // actor → late requests so far
	started  map[string]time.Time        // actor → when its last Guard call started (and decided)
	taken    map[string][]*attempt       // storage key → the attempts that took it, in order
	seq      int
	faulted  map[string]int          // actor → faults its requests met
	last     map[string]idem.Outcome // message (its ID in the queue) → the outcome of its last allowed delivery
	// cancelled: actor's last acquire or commit failed with its context
	// cancelled by its caller: the Guard must say so, not blame the store.
	cancelled map[string]bool
	// held: storage key → the lease that parked its record HELD;
	// reconciledBy: item → attempts whose reconcile answered applied.
	held         map[string]string
	reconciledBy map[string][]*attempt
	// The operator's (invariants_operator.go): tried: storage keys it
	// tried to resolve during the run; reading: what each operator read
	// before its Resolve; resolutions: the writes that landed.
	tried       map[string]bool
	reading     map[string]reading
	resolutions map[string][]resolution
	// owed: per process, per storage key, the attempts whose receipt it
	// owed, in order (invariants_shared.go).
	owed map[*process]map[string][]*attempt
}

// attempt is one Guard attempt: a lease taken (or a commit tried).
type attempt struct {
	token, actor, key, skey string
	proc                    *process
	variant                 int
	acquiredAt, leaseUntil  time.Time // as the store saw them (the process's skew in)
	expiresAt               time.Time // of its record, as the store saw it
	acquiredReal            time.Time
	acquiredSeq             int       // its place among the takes of its record (0: not taken)
	deadline                time.Time // of its call: its receipt may be written until then
	gaveUpAt                time.Time // its receipt write ended without landing (Unconfirmed)
	value                   []byte    // its effect's result
	effectAt                time.Time // when its effect took place (bubble time)
	completeAt              time.Time // its first receipt write
	faults                  []time.Time
	landedAt                time.Time
	releasedAt              time.Time // when its release landed
	releasedSeq             int       // the takes of records so far, then

	// What it took over (lease mode): the status of the record, as the
	// store must report it (PrevStatus: "" for none, or one expired at
	// the acquire's now, which counts as absent); renewed: there was none,
	// or it had expired (a new retention period starts). An acquire sent
	// again may take the record again (its first request landed, another
	// attempt took the record since): the last take before the Guard's
	// answer is what the Guard hears of (told).
	prev     idem.Status
	renewed  bool
	prevSeen bool // prev and renewed are known (its acquire landed)
	told     bool // the Guard has its acquire's answer

	// Remote effects (invariants_remote.go).
	reconciled    string // its reconcile's answer ("" not asked)
	reconciledAt  time.Time
	reconcileLate bool   // its reconcile answered once its context had ended
	ended         string // how its remote effect ended ("" not run)
	endedLate     bool   // and it returned once its context had ended
}

type landedReceipt struct {
	token     string
	value     []byte
	omitted   bool
	variant   int
	expiresAt time.Time // as the store keeps it
	at        time.Time // when it landed
	operator  bool      // an operator's (resolved done): no result, Resolved
}

func newOracle(w *world) *oracle {
	o := &oracle{
		w: w, doubles: map[string]int{}, attempts: map[string]*attempt{}, current: map[string]string{},
		own: map[string]bool{}, sameInv: map[string]string{}, reported: map[string]bool{}, landed: map[string][]landedReceipt{},
		applied: map[string][]*attempt{}, deaths: map[*process]time.Time{}, freezes: map[*process][][2]time.Time{},
		skeyOf: map[string]string{}, ghosts: map[string]int{}, started: map[string]time.Time{}, taken: map[string][]*attempt{},
		faulted: map[string]int{},
		last:    map[string]idem.Outcome{}, cancelled: map[string]bool{},
		held: map[string]string{}, reconciledBy: map[string][]*attempt{},
		tried: map[string]bool{}, reading: map[string]reading{}, resolutions: map[string][]resolution{},
		owed: map[*process]map[string][]*attempt{},
	}
	o.stats.Outcomes = map[string]int{}
	g, _ := idem.New(noStore{}, "sim")
	for _, m := range w.cfg.Messages {
		o.skeyOf[m.Key] = g.StorageKey(m.Key)
	}
	return o
}

// violation records a broken invariant found outside the oracle's hooks.
func (o *oracle) violation(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.violatef(format, args...)
}

// violatef records a broken invariant and puts it in the trace.
func (o *oracle) violatef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	o.violations = append(o.violations, msg)
	o.w.logf("ORACLE", "VIOLATION: %s", msg)
}

// message is the Message an actor (a delivery, "i03/m1") runs.
func (o *oracle) message(actor string) Message {
	id := actor[strings.LastIndexByte(actor, '/')+1:]
	id, _, _ = strings.Cut(id, ".") // a requeued copy, m3.r9, is m3's
	for _, m := range o.w.cfg.Messages {
		if m.ID == id {
			return m
		}
	}
	return Message{}
}

func invocation(actor string) string {
	if i := strings.IndexByte(actor, '/'); i > 0 {
		return actor[:i]
	}
	return actor
}

func (o *oracle) acquiring(ctx context.Context, actor string, p *process, a idem.Acquisition) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.message(actor)
	o.checkContext(ctx, actor)
	o.checkOwed(actor, p, a, m)
	o.current[actor] = a.Lease
	o.cancelled[actor] = false
	deadline, _ := ctx.Deadline()
	o.attempts[a.Lease] = &attempt{token: a.Lease, actor: actor, key: m.Key, skey: a.Key, proc: p, variant: m.Variant,
		acquiredAt: a.Now, leaseUntil: a.LeaseUntil, expiresAt: a.ExpiresAt, acquiredReal: time.Now(), deadline: deadline}
}

func (o *oracle) acquired(ctx context.Context, actor string, a idem.Acquisition, rec idem.Record, ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil:
		o.w.logf(actor, "acquire %s: %v", short(a.Key), err)
		o.failedCall(ctx, actor, a.Key, a.Now, err)
	case ok:
		o.w.logf(actor, "acquire %s: taken, lease %s until +%s, attempt %d", short(a.Key), o.lease(a.Lease), a.LeaseUntil.Sub(a.Now), rec.Attempts)
		o.took(o.attempts[a.Lease])
		o.checkPrev(actor, a, rec)
	default:
		o.w.logf(actor, "acquire %s: in the way: %s lease %s until %s", short(a.Key), rec.Status, o.lease(rec.Lease), o.w.at(rec.LeaseUntil))
		if rec.Lease == a.Lease {
			o.own[actor] = true
			o.took(o.attempts[a.Lease])
			o.checkPrev(actor, a, rec)
		} else if h := o.attempts[rec.Lease]; h != nil && rec.Status == idem.StatusInProgress && invocation(h.actor) == invocation(actor) && !o.reported[h.actor] {
			// A copy whose call is over may have left its lease behind
			// (an acquire that landed and then failed): the copy after
			// it meets it, in progress, rightly.
			o.sameInv[actor] = h.actor
		} else if h != nil && rec.Status == idem.StatusInProgress {
			o.metSibling(o.attempts[a.Lease], h)
		}
		o.checkInTheWay(actor, a, rec)
	}
}

func (o *oracle) writing(actor, token string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.current[actor] = token
	if at := o.attempts[token]; at != nil && at.completeAt.IsZero() {
		at.completeAt = time.Now()
	}
}

func (o *oracle) completed(actor, skey, token string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.logf(actor, "complete %s (lease %s): %v", short(skey), o.lease(token), errText(err))
	giveUp := err != nil && !errors.Is(err, idem.ErrLeaseLost) && !errors.Is(err, idem.ErrResultTooLarge) // the Guard writes it again without its result
	at := o.attempts[token]
	if at != nil && giveUp && at.gaveUpAt.IsZero() {
		at.gaveUpAt = time.Now()
	}
	if errors.Is(err, idem.ErrLeaseLost) {
		// Its receipt landed and the record is gone (expired, deleted by
		// TTL) or was taken since it expired: lease lost is all a store
		// can say.
		if rec, found := o.w.store.record(skey); found && rec.Lease == token {
			o.violatef("%s: its own receipt write (lease %s) reported lease lost", actor, o.lease(token))
		}
	}
}

// released checks a release: one that landed (its reply lost, sent again
// after another attempt took the FAILED record it left) is the caller's
// own write, never lease lost.
func (o *oracle) released(actor, skey, token string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.logf(actor, "release %s (lease %s): %v", short(skey), o.lease(token), errText(err))
	at := o.attempts[token]
	if at == nil || at.releasedAt.IsZero() || !errors.Is(err, idem.ErrLeaseLost) {
		return
	}
	if _, ok := o.w.store.record(skey); !ok {
		return // expired and deleted since it landed: nothing to tell it by
	}
	// A store can tell its own release sent again from the record: by
	// what the acquire that took the record from it replaced (one takeover
	// back, whatever the taker did since), or by the last release that
	// landed (any number of takeovers, none of them released since).
	// Beyond both — two takeovers and another release — it cannot, and
	// lease lost is what it says.
	takers, released := 0, false
	for _, t := range o.taken[skey] {
		if t.acquiredSeq > at.releasedSeq {
			takers++
			released = released || !t.releasedAt.IsZero()
		}
	}
	if takers <= 1 || !released {
		o.violatef("%s: its own release (lease %s), which landed at %s, reported lease lost (%d attempts took the record since, released %v)",
			actor, o.lease(token), o.w.at(at.releasedAt), takers, released)
	}
}

func (o *oracle) committing(ctx context.Context, actor string, p *process, t idem.Transaction) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.message(actor)
	o.checkContext(ctx, actor)
	o.current[actor] = t.Token
	o.cancelled[actor] = false
	o.attempts[t.Token] = &attempt{token: t.Token, actor: actor, key: m.Key, skey: t.Key, proc: p, variant: m.Variant,
		acquiredAt: t.Now, acquiredReal: time.Now()}
}

func (o *oracle) committed(ctx context.Context, actor string, t idem.Transaction, rec idem.Record, ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.logf(actor, "commit %s (token %s): committed %v, in the way %s %s, %v", short(t.Key), o.lease(t.Token), ok, rec.Status, o.lease(rec.Lease), errText(err))
	if err != nil {
		o.failedCall(ctx, actor, t.Key, t.Now, err)
	}
	if !ok && err == nil && rec.Lease == t.Token {
		o.violatef("%s: its own commit (token %s) reported as not committed", actor, o.lease(t.Token))
	}
	if !ok && err == nil {
		o.checkInTheWay(actor, idem.Acquisition{Key: t.Key, Lease: t.Token, Now: t.Now}, rec)
	}
}

// took notes that at holds the record now, in the order of takes.
func (o *oracle) took(at *attempt) {
	if at == nil || at.acquiredSeq != 0 {
		return
	}
	o.seq++
	at.acquiredSeq = o.seq
	o.taken[at.skey] = append(o.taken[at.skey], at)
}

// lease names a lease (or commit) token in the trace: a mark the trace
// turns into L1, L2, … in the order it prints them (trace.String), so that
// a seed prints the same trace every time, though the tokens themselves are
// random and two goroutines may name them first in either order.
func (o *oracle) lease(token string) string {
	if token == "" {
		return "-"
	}
	return tokenMark + token + tokenMark
}

// token is the lease (or commit token) of actor's attempt in progress.
func (o *oracle) token(actor string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.current[actor]
}

// ghostName names a late request of actor, uniquely and the same way in
// every run of the seed.
func (o *oracle) ghostName(actor string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ghosts[actor]++
	return fmt.Sprintf("late:%s:%d", actor, o.ghosts[actor])
}

// full notes that actor's request met a server out of memory: a store
// error may follow, and (the scripts allowing receipts then) no receipt
// may be lost to it.
func (o *oracle) full(actor string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.faulted[actor]++
}

// fault notes a fault injected into a request of actor's current attempt.
func (o *oracle) fault(actor string, f fault) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.faulted[actor]++
	if at := o.attempts[o.current[actor]]; at != nil {
		at.faults = append(at.faults, time.Now())
	}
}

func (o *oracle) died(p *process) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deaths[p] = time.Now()
}

func (o *oracle) froze(p *process, from, until time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.freezes[p] = append(o.freezes[p], [2]time.Time{from, until})
}

// count changes the statistics.
func (o *oracle) count(f func(*Stats)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(&o.stats)
}

func (o *oracle) delivered(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Deliveries += n
}

// observe is every Guard's observer: an error goes with every outcome but
// Executed, Duplicate, Reconciled and Rerun.
func (o *oracle) observe(ctx context.Context, e idem.Event) {
	actor := o.w.actorOf(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started[actor] = time.Now().Add(-e.Duration)
	if e.Outcome == idem.Unconfirmed {
		o.owedBy(procOf(ctx), o.attempts[o.current[actor]])
	}
	if (e.Err == nil) != (e.Outcome == idem.Executed || e.Outcome == idem.Duplicate || e.Outcome == idem.Reconciled || e.Outcome == idem.Rerun) {
		o.violatef("observer: outcome %s with error %v", e.Outcome, e.Err)
	}
}

// noStore is a Store that is never called: the oracle's Guard only names
// storage keys.
type noStore struct{ idem.Store }

func (noStore) Capabilities() idem.Capabilities {
	return idem.Capabilities{MaxResultSize: 1, MaxKeySize: idem.MaxStorageKeyLen}
}

func short(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 && len(s) > i+7 {
		return s[:i+7]
	}
	if len(s) > 6 {
		return s[:6]
	}
	return s
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
