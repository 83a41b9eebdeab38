package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/partner"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Evidence is everything the accounting looks at once the run is over.
type Evidence struct {
	Plan Plan
	// Applied is how many times each key had its effect (the probe's
	// answer), AppliedAt when it was first executed (the consumers' logs).
	Applied     map[string]int
	AppliedAt   map[string]time.Time
	DeadLetters []system.DeadLetter
	Events      []Event
	Windows     []Window          // Unconfirmed and LeaseLost records
	KeyOf       map[string]string // storage key → key
	SentAt      map[string]time.Time
	// Handed are the keys the publisher gave the producer; nil: all.
	// A run stopped by its time limit hands over only some.
	Handed      map[string]time.Time
	Unpublished []string
	// MalformedIDs are the message ids of the malformed messages sent.
	MalformedIDs []string
	// Failures is the last failure the consumers logged for each
	// message, by message id.
	Failures  map[string]Failure
	LeaseMode bool
	// Policy is the lease-mode run's unknown-outcome policy (Policies;
	// "" counts as PolicyReconcile); none in transactional mode.
	Policy string
	// PartnerFaults are the faults the partner injected into the
	// effect's calls, by key.
	PartnerFaults []partner.Injection
	// Held are the keys whose record was HELD when the queue had
	// drained (idemctl list --status held).
	Held map[string]bool
	// Reruns are the records the consumers logged as Rerun (an unknown
	// outcome run again), PartnerDown when the partner's outage began
	// and ended (zero: none), and Lease the longest an attempt holds a key
	// (the function timeout): a reconcile that could not tell during the
	// outage may have been asked up to Lease before its rerun was logged.
	Reruns      []Window
	PartnerDown [2]time.Time
	Lease       time.Duration
}

// Double is a key whose effect ran more than once, and why.
type Double struct {
	Key     string
	Applied int
	Causes  []Cause // empty: unexplained; the most direct first
}

// Cause is something that can run a key's effect twice.
type Cause struct {
	Class string // "Unconfirmed", "kill after-effect", "freeze", … (for counting)
	Text  string // which one, when, where
}

// Cause classes, most direct first.
const (
	ClassPartnerLost = "partner applied the call and its reply was lost (unknown outcome, run again)"
	ClassPartnerSlow = "partner applied the call and answered past the caller's deadline (unknown outcome, run again)"
	ClassUnconfirmed = "Unconfirmed (receipt not written before the lease ended)"
	ClassLeaseLost   = "LeaseLost (a zombie's lease taken over)"
	ClassEffectLate  = "effect's write timed out at its deadline, applied anyway (released, run again)"
	ClassFreeze      = "SIGSTOP zombie (lease expired while frozen)"
	ClassKillAfter   = "SIGKILL after the effect, before the receipt"
	ClassKillBatch   = "SIGKILL of another record's point, same batch"
	ClassKillProcess = "SIGKILL of another invocation, same process"
	ClassKillMid     = "SIGKILL mid-batch"
	ClassTimeout     = "killed at the function timeout"
	ClassCrash       = "process crash"
	ClassRerun       = "Rerun (an unknown outcome run again, counted: the retry policy's window)"
)

var classRank = map[string]int{
	ClassPartnerLost: 0, ClassPartnerSlow: 1, ClassUnconfirmed: 2, ClassLeaseLost: 3, ClassFreeze: 4, ClassKillAfter: 5,
	ClassKillMid: 6, ClassEffectLate: 7, ClassKillBatch: 8, ClassKillProcess: 9, ClassTimeout: 10, ClassCrash: 11,
	// Last: it says the window was entered and counted; the causes before
	// it say what left the outcome unknown.
	ClassRerun: 12,
}

// ShortClass is a cause class in a few words, for the side-by-side table.
func ShortClass(class string) string {
	switch class {
	case ClassPartnerLost:
		return "lost reply"
	case ClassPartnerSlow:
		return "slow past deadline"
	case ClassUnconfirmed:
		return "unconfirmed"
	case ClassLeaseLost:
		return "lease lost"
	case ClassEffectLate:
		return "effect timed out"
	case ClassFreeze:
		return "zombie"
	case ClassKillAfter:
		return "kill after the call"
	case ClassKillBatch:
		return "kill, same batch"
	case ClassKillMid:
		return "kill mid-batch"
	case ClassKillProcess:
		return "kill, same process"
	case ClassTimeout:
		return "function timeout"
	case ClassCrash:
		return "crash"
	case ClassRerun:
		return "rerun"
	}
	return class
}

// Account is what happened to every key.
type Account struct {
	Keys          int // keys published (poison included)
	Applied       int // keys whose effect took place
	DoubleEffects int // effects beyond the first
	Doubled       []Double
	Unexplained   []string // doubled keys no kill, freeze or missing receipt explains
	Lost          []string // neither applied nor in the DLQ
	Unpublished   []string // never confirmed sent by the producer, and not applied
	NotSent       int      // never handed to the producer: the run stopped first
	PoisonApplied []string // poison keys whose effect took place: impossible
	DLQ           []ReasonCount
	DLQByClass    map[string]int // dead letters by DLQClasses, for comparing runs
	DLQKeys       []string       // plain keys in the DLQ (allowed, with their reason)
	Latency       Percentiles
	Windows       map[string]int // Unconfirmed / LeaseLost records by outcome
	LeaseMode     bool
	Policy        string // the lease-mode policy, "" in transactional mode
	// Held are the keys HELD when the queue drained, sorted (hold policy);
	// HeldNotDead those of them with no message in the DLQ, HeldDirect
	// those of them held by a copy the run delivered straight to a
	// consumer (a takeover or fan-out, which no queue sends to the DLQ),
	// their messages in the queue all consumed; HeldDead the dead letters
	// whose last receive failed as held.
	Held        []string
	HeldNotDead []string
	HeldDirect  []string
	HeldDead    int
	// Reruns counts the records logged Rerun; RerunsBarred are the keys
	// of those the policy does not allow (hold, transactional: none;
	// reconcile: only while the partner could not answer a lookup, its
	// outage), and Uncounted the doubled keys of the retry policy with no
	// rerun counted though no invocation of theirs was killed, frozen or
	// timed out (which could have taken the rerun's log line with it).
	Reruns       int
	RerunsBarred []string
	Uncounted    []string
}

// ReasonCount is one DLQ reason and the messages that carry it.
type ReasonCount struct {
	Reason string
	Count  int
}

// What a dead letter is, for comparing runs: a poison key or a malformed
// message, which only the DLQ can take; a message whose last receive
// failed on the receipt store, which a later one could have run; or
// anything else.
const (
	DeadPoison    = "poison"
	DeadMalformed = "malformed"
	DeadHeld      = "held" // its key parked by the hold policy (idem.ErrHeld)
	DeadStore     = "store failure"
	DeadOther     = "other"
)

// DLQClasses lists the classes of dead letters in the order the report
// gives them.
func DLQClasses() []string {
	return []string{DeadPoison, DeadMalformed, DeadHeld, DeadStore, DeadOther}
}

// Settle accounts for every key of the evidence's plan, and for every
// malformed message sent.
func Settle(ev Evidence) Account {
	a := Account{Windows: map[string]int{}, DLQByClass: map[string]int{}, LeaseMode: ev.LeaseMode}
	if ev.LeaseMode {
		a.Policy = cmp.Or(ev.Policy, PolicyReconcile)
	}
	dead := map[string]bool{} // by key, and by message id
	reasons := map[string]int{}
	killed := killsByKey(ev.Events)
	malformed := map[string]bool{}
	for _, id := range ev.MalformedIDs {
		malformed[id] = true
	}
	lastHit := lastEvents(ev.Events)
	for _, d := range ev.DeadLetters {
		a.DLQByClass[deadClass(d, ev, malformed, lastHit)]++
		if heldLetter(d, ev) {
			a.HeldDead++
		}
		dead[d.MessageID] = true
		reason := Tidy(d.Reason)
		switch {
		case reason != "":
		case d.Key != "" && killed[d.Key] != "":
			// No delivery lived to log an outcome.
			reason = "never answered: every delivery was killed (" + killed[d.Key] + ")"
		default:
			reason = NoReason
		}
		reasons[reason]++
		if d.Key == "" {
			continue
		}
		dead[d.Key] = true
		if !ev.Plan.Poison[d.Key] {
			a.DLQKeys = append(a.DLQKeys, d.Key)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		a.DLQ = append(a.DLQ, ReasonCount{Reason: r, Count: reasons[r]})
	}
	unpublished := map[string]bool{}
	for _, id := range ev.Unpublished {
		unpublished[id] = true
	}
	causes := attribute(ev)
	var latencies []time.Duration
	for _, k := range ev.Plan.Keys {
		if _, handed := ev.Handed[k]; ev.Handed != nil && !handed {
			a.NotSent++
			continue
		}
		a.Keys++
		n := ev.Applied[k]
		switch {
		case n >= 1 && ev.Plan.Poison[k]:
			a.PoisonApplied = append(a.PoisonApplied, k)
		case n >= 1:
			a.Applied++
			sent, ok := ev.SentAt[k]
			if at := ev.AppliedAt[k]; ok && n == 1 && !at.IsZero() {
				latencies = append(latencies, at.Sub(sent))
			}
		case dead[k]:
		case unpublished[k]:
			a.Unpublished = append(a.Unpublished, k)
		default:
			a.Lost = append(a.Lost, k)
		}
		if n > 1 {
			a.DoubleEffects += n - 1
			d := Double{Key: k, Applied: n, Causes: causes[k]}
			a.Doubled = append(a.Doubled, d)
			if len(d.Causes) == 0 {
				a.Unexplained = append(a.Unexplained, k)
			}
		}
	}
	for _, id := range ev.MalformedIDs {
		if !dead[id] {
			a.Lost = append(a.Lost, "malformed message "+id)
		}
	}
	for _, w := range ev.Windows {
		a.Windows[w.Outcome]++
	}
	a.Latency = PercentilesOf(latencies)
	a.Reruns = len(ev.Reruns)
	a.RerunsBarred = rerunsBarred(ev, a.Policy)
	if a.Policy == PolicyRetry {
		a.Uncounted = uncounted(ev, a.Doubled, killed, a.Unexplained)
	}
	a.Held = slices.Sorted(maps.Keys(ev.Held))
	direct := directKeys(ev)
	for _, k := range a.Held {
		switch {
		case dead[k]:
		case direct[k]:
			a.HeldDirect = append(a.HeldDirect, k)
		default:
			a.HeldNotDead = append(a.HeldNotDead, k)
		}
	}
	return a
}

// directKeys are the keys the run also delivered straight to consumers,
// not through the queue: the fan-outs, and the takeovers of frozen
// zombies.
func directKeys(ev Evidence) map[string]bool {
	out := maps.Clone(ev.Plan.FanOut)
	if out == nil {
		out = map[string]bool{}
	}
	for _, e := range ev.Events {
		if e.Kind == EventFreeze && e.Key != "" {
			out[e.Key] = true
		}
	}
	return out
}

// heldLetter reports whether dead letter d's last receive failed because
// its key was held (idem.ErrHeld).
func heldLetter(d system.DeadLetter, ev Evidence) bool {
	return ev.Failures[d.MessageID].Outcome == idem.Held.String() || strings.Contains(d.Reason, idem.ErrHeld.Error())
}

// deadClass says what dead letter d is (DLQClasses). A store failure is
// a message whose last logged failure was the store's, and not followed by
// a kill, a freeze or a timeout of an invocation with its key (lastHit):
// then that, not the store, had its last receive.
func deadClass(d system.DeadLetter, ev Evidence, malformed map[string]bool, lastHit map[string]time.Time) string {
	f := ev.Failures[d.MessageID]
	switch {
	case ev.Plan.Poison[d.Key]:
		return DeadPoison
	case malformed[d.MessageID] || d.Key == "":
		return DeadMalformed
	case heldLetter(d, ev):
		return DeadHeld
	case f.Outcome == idem.StoreError.String() && !lastHit[d.Key].After(f.At):
		return DeadStore
	}
	return DeadOther
}

// lastEvents is when an invocation with each key was last killed, frozen
// or timed out.
func lastEvents(events []Event) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range events {
		for _, k := range e.Batch {
			if e.At.After(out[k]) {
				out[k] = e.At
			}
		}
	}
	return out
}

// storageKey matches a hashed storage key (namespace#sha256).
var storageKey = regexp.MustCompile(`#[0-9a-f]{64}`)

// Tidy makes an error fit a line of the report: one line, the storage
// keys shortened (the key is named next to it), durations of leases
// left out so that the same reason groups.
func Tidy(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " / ")
	s = storageKey.ReplaceAllString(s, "#…")
	if i := strings.Index(s, " leased for another "); i >= 0 {
		s = s[:i] + " (leased)"
	}
	return s
}

// NoReason is the DLQ reason of a message nothing explains.
const NoReason = "(no reason logged)"

// killsByKey names, per key, the kinds of kill its invocations met.
func killsByKey(events []Event) map[string]string {
	kinds := map[string]map[string]bool{}
	for _, e := range events {
		what := e.Kind
		if e.Point != "" {
			what += " " + e.Point
		}
		for _, id := range e.Batch {
			if kinds[id] == nil {
				kinds[id] = map[string]bool{}
			}
			kinds[id][what] = true
		}
	}
	out := make(map[string]string, len(kinds))
	for id, k := range kinds {
		out[id] = strings.Join(slices.Sorted(maps.Keys(k)), ", ")
	}
	return out
}

// attribute names, for each key, what could have run its effect twice:
// a receipt that was not written (Unconfirmed) or that a zombie lost
// (LeaseLost), and every kill, freeze or timeout of an invocation whose
// batch held the key — any record of such a batch may have been between
// its effect and its receipt.
func attribute(ev Evidence) map[string][]Cause {
	out := map[string][]Cause{}
	for _, in := range ev.PartnerFaults {
		at := in.At.Format("15:04:05.000")
		switch in.Kind {
		case partner.InjectLostReply:
			out[in.Key] = append(out[in.Key], Cause{ClassPartnerLost, "partner applied the call at " + at + " and cut its reply"})
		case partner.InjectSlow:
			out[in.Key] = append(out[in.Key], Cause{ClassPartnerSlow, "partner applied the call at " + at + " and answered after the caller's deadline"})
		}
	}
	for _, w := range ev.Reruns {
		id := ev.KeyOf[w.RecordKey]
		out[id] = append(out[id], Cause{ClassRerun, fmt.Sprintf("Rerun at %s: its unknown outcome run again", w.At.Format("15:04:05.000"))})
	}
	for _, w := range ev.Windows {
		id := ev.KeyOf[w.RecordKey]
		switch w.Outcome {
		case "unconfirmed":
			out[id] = append(out[id], Cause{ClassUnconfirmed, fmt.Sprintf("Unconfirmed at %s: %s", w.At.Format("15:04:05.000"), Tidy(w.Error))})
		case "lease_lost":
			out[id] = append(out[id], Cause{ClassLeaseLost, fmt.Sprintf("LeaseLost at %s: the zombie's effect ran, another instance took the key over", w.At.Format("15:04:05.000"))})
		case EffectTimeout:
			out[id] = append(out[id], Cause{ClassEffectLate, fmt.Sprintf("effect failed at %s at its deadline, its write in flight: %s", w.At.Format("15:04:05.000"), Tidy(w.Error))})
		}
	}
	for _, e := range ev.Events {
		for _, id := range e.Batch {
			out[id] = append(out[id], e.cause(id))
		}
	}
	for id, cs := range out {
		slices.SortStableFunc(cs, func(a, b Cause) int { return classRank[a.Class] - classRank[b.Class] })
		out[id] = cs
	}
	return out
}

// rerunsBarred are the keys of the reruns policy does not allow: under
// hold (never a rerun) and in transactional mode (no unknown outcome),
// every one; under reconcile, those logged while the partner answered
// lookups — unless the outage began within ev.Lease before (the reconcile
// of that attempt was asked then, and could not tell). Sorted, once each.
func rerunsBarred(ev Evidence, policy string) []string {
	if policy == PolicyRetry {
		return nil
	}
	from, to := ev.PartnerDown[0], ev.PartnerDown[1]
	barred := map[string]bool{}
	for _, w := range ev.Reruns {
		asked := w.At.Add(-ev.Lease)
		if policy == PolicyReconcile && !from.IsZero() && !w.At.Before(from) && (to.IsZero() || !asked.After(to)) {
			continue // its reconcile met the outage
		}
		barred[cmp.Or(ev.KeyOf[w.RecordKey], w.RecordKey)] = true
	}
	return slices.Sorted(maps.Keys(barred))
}

// uncounted are the doubled keys with no rerun counted, none of whose
// invocations was killed, frozen or timed out: the retry policy promises
// a key applied twice only where a rerun was counted for it (its log
// line, the metric Rerun). The unexplained ones are a problem already.
func uncounted(ev Evidence, doubled []Double, killed map[string]string, unexplained []string) []string {
	counted := map[string]bool{}
	for _, w := range ev.Reruns {
		counted[ev.KeyOf[w.RecordKey]] = true
	}
	var out []string
	for _, d := range doubled {
		if !counted[d.Key] && killed[d.Key] == "" && !slices.Contains(unexplained, d.Key) {
			out = append(out, d.Key)
		}
	}
	return out
}

// cause says what e did, as seen from key id of its batch.
func (e Event) cause(id string) Cause {
	at := e.At.Format("15:04:05.000")
	switch {
	case e.Kind == EventKill && e.Point == lambdarun.PointKillAfter:
		return Cause{ClassKillMid, fmt.Sprintf("SIGKILL mid-batch %s (%s, %s)", e.Detail, e.Pool, at)}
	case e.Kind == EventKill && e.Key == id && e.Point == PointAfterEffect:
		return Cause{ClassKillAfter, fmt.Sprintf("SIGKILL at after-effect of this key (%s, %s)", e.Pool, at)}
	case e.Kind == EventKill:
		return Cause{ClassKillBatch, fmt.Sprintf("SIGKILL at %s of %s, same batch (%s, %s)", e.Point, e.Key, e.Pool, at)}
	case e.Kind == EventFreeze && e.Key == id:
		return Cause{ClassFreeze, fmt.Sprintf("SIGSTOP at after-effect of this key, %s (%s, %s)", e.Detail, e.Pool, at)}
	case e.Kind == EventFreeze:
		return Cause{ClassFreeze, fmt.Sprintf("SIGSTOP at after-effect of %s, same batch, %s (%s, %s)", e.Key, e.Detail, e.Pool, at)}
	case e.Kind == EventTimeout:
		return Cause{ClassTimeout, fmt.Sprintf("killed at the function timeout (%s, %s)", e.Pool, at)}
	case e.Kind == EventProcess:
		return Cause{ClassKillProcess, fmt.Sprintf("SIGKILL with its process (%s, %s): %s", e.Pool, at, e.Detail)}
	}
	return Cause{ClassCrash, fmt.Sprintf("%s (%s, %s): %s", e.Kind, e.Pool, at, e.Detail)}
}

// ByCause counts the double effects by the most direct cause of each.
func (a Account) ByCause() []ReasonCount {
	n := map[string]int{}
	for _, d := range a.Doubled {
		class := "unexplained"
		if len(d.Causes) > 0 {
			class = d.Causes[0].Class
		}
		n[class] += d.Applied - 1
	}
	var out []ReasonCount
	for class, c := range n {
		out = append(out, ReasonCount{Reason: class, Count: c})
	}
	slices.SortFunc(out, func(a, b ReasonCount) int { return b.Count - a.Count })
	return out
}

// Percentiles of a set of durations.
type Percentiles struct {
	N             int
	P50, P99, Max time.Duration
}

// PercentilesOf uses the nearest-rank method.
func PercentilesOf(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Percentiles{N: len(s), P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1]}
}

// Problems lists every way the run broke the invariant; none means it
// held. The invariant depends on the mode and the policy: transactional
// mode and the reconcile and hold policies allow no double effect; the
// retry policy allows those an unknown-outcome window explains (a kill, a
// freeze, a lost or late reply, a missing receipt, a rerun), never an
// unexplained one, and a key applied twice has a rerun counted (unless
// the kill that may have taken its log line explains it). A rerun is the
// retry policy's: never under hold nor in transactional mode, and under
// reconcile only where the reconcile could not tell (the partner's
// outage). Only the hold policy may hold a key; there, every held key must
// have its messages in the DLQ.
func (a Account) Problems() []string {
	var p []string
	if len(a.Lost) > 0 {
		p = append(p, fmt.Sprintf("%d lost (neither applied nor in the DLQ): %s", len(a.Lost), head(a.Lost)))
	}
	if len(a.Unpublished) > 0 {
		p = append(p, fmt.Sprintf("%d keys never published (the producer could not confirm them): %s", len(a.Unpublished), head(a.Unpublished)))
	}
	if a.NotSent > 0 {
		p = append(p, fmt.Sprintf("%d keys never sent: the run stopped first", a.NotSent))
	}
	if len(a.PoisonApplied) > 0 {
		p = append(p, fmt.Sprintf("%d poison keys applied: %s", len(a.PoisonApplied), head(a.PoisonApplied)))
	}
	switch {
	case !a.LeaseMode && a.DoubleEffects > 0:
		p = append(p, fmt.Sprintf("transactional mode: %d double effects: %s", a.DoubleEffects, head(ids(a.Doubled))))
	case a.LeaseMode && a.Policy != PolicyRetry && a.DoubleEffects > 0:
		p = append(p, fmt.Sprintf("%s policy: %d double effects, want none: %s", a.Policy, a.DoubleEffects, head(firstCauses(a.Doubled))))
	case len(a.Unexplained) > 0:
		p = append(p, fmt.Sprintf("%d double effects no kill, freeze, lost or late reply or missing receipt explains: %s", len(a.Unexplained), head(a.Unexplained)))
	}
	switch {
	case len(a.RerunsBarred) == 0:
	case !a.LeaseMode:
		p = append(p, fmt.Sprintf("transactional mode: %d keys rerun (no unknown outcome can be): %s", len(a.RerunsBarred), head(a.RerunsBarred)))
	case a.Policy == PolicyHold:
		p = append(p, fmt.Sprintf("at-most-once (hold): %d keys rerun, want none: %s", len(a.RerunsBarred), head(a.RerunsBarred)))
	default:
		p = append(p, fmt.Sprintf("%s policy: %d keys rerun while the partner answered every lookup (only a reconcile that could not tell may rerun): %s",
			a.Policy, len(a.RerunsBarred), head(a.RerunsBarred)))
	}
	if len(a.Uncounted) > 0 {
		p = append(p, fmt.Sprintf("at-least-once (retry): %d keys applied more than once without a rerun counted, none of their invocations killed: %s",
			len(a.Uncounted), head(a.Uncounted)))
	}
	if a.Policy != PolicyHold {
		if len(a.Held) > 0 {
			p = append(p, fmt.Sprintf("%d keys held, but the policy is %s: %s", len(a.Held), orNone(a.Policy), head(a.Held)))
		}
		if a.HeldDead > 0 {
			p = append(p, fmt.Sprintf("%d dead letters failed as held, but the policy is %s", a.HeldDead, orNone(a.Policy)))
		}
	}
	if len(a.HeldNotDead) > 0 {
		p = append(p, fmt.Sprintf("%d held keys without a message in the DLQ nor a copy delivered straight to a consumer: %s", len(a.HeldNotDead), head(a.HeldNotDead)))
	}
	for _, r := range a.DLQ {
		if r.Reason == NoReason {
			p = append(p, fmt.Sprintf("%d dead letters without a logged reason", r.Count))
		}
	}
	return p
}

func orNone(policy string) string {
	if policy == "" {
		return "none (transactional mode)"
	}
	return policy
}

// firstCauses names each doubled key with its most direct cause.
func firstCauses(ds []Double) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		cause := "unexplained"
		if len(d.Causes) > 0 {
			cause = ShortClass(d.Causes[0].Class)
		}
		out[i] = fmt.Sprintf("%s ×%d (%s)", d.Key, d.Applied, cause)
	}
	return out
}

func ids(ds []Double) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Key
	}
	return out
}

func head(xs []string) string {
	if len(xs) > 10 {
		return strings.Join(xs[:10], ", ") + fmt.Sprintf(" … (%d more)", len(xs)-10)
	}
	return strings.Join(xs, ", ")
}
