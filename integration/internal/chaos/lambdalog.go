package chaos

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"sync"
	"time"
)

// LambdaLog reads the Lambdas' output as the harness writes it (prefixed
// lines) and keeps what the report needs: the consumers' record outcomes,
// when each storage key was first executed, each record whose effect
// may have run without a receipt it could keep, with the reason:
// Unconfirmed, LeaseLost, and an effect that failed at its deadline (see
// EffectTimeout), and each rerun (an unknown outcome nobody settled, run
// again under the retry policy: idem.Rerun, logged at WARN with its
// storage key). Everything is also copied to Out (the run's log file).
// Only the few lines of interest are decoded.
type LambdaLog struct {
	Out io.Writer

	mu       sync.Mutex
	buf      []byte
	outcomes map[string]int
	executed map[string]time.Time // storage key → first executed (or rerun)
	windows  []Window
	reruns   []Window           // Outcome Rerun
	failures map[string]Failure // message id → its last failure
}

// Failure is a record's failure as a consumer logged it.
type Failure struct {
	At      time.Time
	Outcome string // "store_error", "failed", "skipped" …
}

// EffectTimeout is the Window outcome of a record whose effect failed at
// its deadline: its own write may have been applied all the same (the
// request was sent; only the answer was late). The Guard sees an effect
// error, releases the record and the next delivery runs the effect again:
// the lease-mode window, opened by a timeout rather than a crash, and not
// one the library can name (Unconfirmed is for a receipt that could not
// be written). A failed record is the effect's error (a store's is a
// StoreError), so its deadline is the effect's.
const EffectTimeout = "effect_timeout"

// Rerun is the outcome of a record that took over an unknown outcome no
// reconcile settled (none, or it could not tell) and ran the effect again
// under the retry policy, its receipt written (idem.Rerun): the lease-mode
// window, entered and counted.
const Rerun = "rerun"

// Window is a record whose effect ran, or may have, without its receipt.
type Window struct {
	At        time.Time
	Outcome   string // "unconfirmed", "lease_lost" or EffectTimeout
	RecordKey string // the storage key (namespace#sha256(key))
	MessageID string
	Error     string
}

var (
	recordMsg  = []byte(`"msg":"record `)
	failedMsg  = []byte(`"msg":"record failed"`)
	messageKey = []byte(`"message_id":"`)
	outcomeKey = []byte(`"outcome":"`)
	rerunAttr  = []byte(`"rerun":true`)
	timeKey    = []byte(`"time":"`)
	recordKey  = []byte(`"storage_key":"`)
	lateAnswer = [][]byte{[]byte(`deadline exceeded`), []byte(`canceled`)}
)

func (l *LambdaLog) Write(p []byte) (int, error) {
	if l.Out != nil {
		if _, err := l.Out.Write(p); err != nil {
			return 0, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.outcomes == nil {
		l.outcomes, l.executed, l.failures = map[string]int{}, map[string]time.Time{}, map[string]Failure{}
	}
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *LambdaLog) line(b []byte) {
	if !bytes.Contains(b, recordMsg) {
		return
	}
	i := bytes.Index(b, outcomeKey)
	if i < 0 {
		return
	}
	rest := b[i+len(outcomeKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return
	}
	outcome := string(rest[:j])
	l.outcomes[outcome]++
	if bytes.Contains(b, failedMsg) {
		l.failed(b, outcome)
	}
	switch {
	case outcome == "executed":
		l.firstExecuted(b)
		return
	case outcome == Rerun:
		l.firstExecuted(b) // its receipt is the key's first, too
	case outcome == "unconfirmed", outcome == "lease_lost":
	case outcome == "failed" && (bytes.Contains(b, lateAnswer[0]) || bytes.Contains(b, lateAnswer[1])):
		outcome = EffectTimeout
	default:
		return
	}
	k := bytes.IndexByte(b, '{')
	var rec struct {
		Time      time.Time `json:"time"`
		MessageID string    `json:"message_id"`
		RecordKey string    `json:"storage_key"`
		Error     string    `json:"error"`
	}
	if k < 0 || json.Unmarshal(b[k:], &rec) != nil {
		return
	}
	w := Window{At: rec.Time, Outcome: outcome, RecordKey: rec.RecordKey, MessageID: rec.MessageID, Error: rec.Error}
	if outcome == Rerun {
		l.reruns = append(l.reruns, w)
		return
	}
	if bytes.Contains(b, rerunAttr) {
		// A re-run whose receipt then failed (unconfirmed, lease lost):
		// a re-run too.
		rw := w
		rw.Outcome = Rerun
		l.reruns = append(l.reruns, rw)
	}
	l.windows = append(l.windows, w)
}

// firstExecuted notes when the storage key of an "executed" (or "rerun")
// line was first executed, without decoding the line.
func (l *LambdaLog) firstExecuted(b []byte) {
	key, at := field(b, recordKey), field(b, timeKey)
	if key == "" {
		return
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if old, ok := l.executed[key]; err != nil || (ok && !t.Before(old)) {
		return
	}
	l.executed[key] = t
}

// failed notes the failure of a "record failed" line, the message's last
// so far, without decoding the line.
func (l *LambdaLog) failed(b []byte, outcome string) {
	id := field(b, messageKey)
	t, err := time.Parse(time.RFC3339Nano, field(b, timeKey))
	if old, ok := l.failures[id]; id == "" || err != nil || (ok && t.Before(old.At)) {
		return
	}
	l.failures[id] = Failure{At: t, Outcome: outcome}
}

// field is the string value after prefix in b, "" when there is none.
func field(b, prefix []byte) string {
	i := bytes.Index(b, prefix)
	if i < 0 {
		return ""
	}
	rest := b[i+len(prefix):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// Executed returns when each storage key was first executed.
func (l *LambdaLog) Executed() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.executed)
}

// Outcomes returns the record outcomes logged so far.
func (l *LambdaLog) Outcomes() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.outcomes)
}

// Failures returns the last failure logged for each message that failed.
func (l *LambdaLog) Failures() map[string]Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.failures)
}

// Reruns returns the records whose effect ran again after an unknown
// outcome (Rerun).
func (l *LambdaLog) Reruns() []Window {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Window(nil), l.reruns...)
}

// Windows returns the records whose effect ran without their own receipt.
func (l *LambdaLog) Windows() []Window {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Window(nil), l.windows...)
}
