package system

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Records collects the per-record lines the consumers log (sqsbatch's
// "record done" / "record failed", one line per record, and the Rerun
// line of a record whose effect ran again after an unknown outcome), so
// a test can say what happened to each message and why a message ended
// in the DLQ; and the line each instance logs at init (consumer.LogReady),
// which says what the consumer promises (Ready).
type Records struct {
	mu      sync.Mutex
	buf     []byte
	byMsg   map[string][]Line
	byKey   map[string][]Line // by storage key
	byOut   map[string]int
	ready   []Ready
	batches int
}

// Line is one logged record outcome.
type Line struct {
	MessageID string `json:"message_id"`
	Outcome   string `json:"outcome"`
	Attempts  int    `json:"attempts"`
	Error     string `json:"error"`
	RecordKey string `json:"storage_key"`
	Msg       string `json:"msg"`
}

// Ready is what a consumer instance said of itself at init (the runtime's
// consumer.LogReady line): its mode, its unknown-outcome policy, whether
// its effect reconciles, and the guarantee those make
// (consumer.Guarantee). The scenarios check that guarantee, whatever the
// effect or the template chose.
type Ready struct {
	Mode           string `json:"mode"`
	UnknownOutcome string `json:"unknown_outcome"`
	Reconcile      bool   `json:"reconcile"`
	Guarantee      string `json:"guarantee"`
	Namespace      string `json:"namespace"`
	Store          string `json:"store"`
}

// NewRecords returns an empty Records; write the consumers' log to it.
func NewRecords() *Records {
	return &Records{byMsg: map[string][]Line{}, byKey: map[string][]Line{}, byOut: map[string]int{}}
}

// Write takes the harness's prefixed log lines; it finds the JSON in each.
func (r *Records) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			break
		}
		r.parse(r.buf[:i])
		r.buf = r.buf[i+1:]
	}
	return len(p), nil
}

func (r *Records) parse(line []byte) {
	j := bytes.IndexByte(line, '{')
	if j < 0 {
		return
	}
	var l Line
	if json.Unmarshal(line[j:], &l) != nil {
		return
	}
	switch l.Msg {
	case "record done", "record failed", "record done without receipt", "record requeued", consumer.LogRerun:
		r.byMsg[l.MessageID] = append(r.byMsg[l.MessageID], l)
		if l.RecordKey != "" {
			r.byKey[l.RecordKey] = append(r.byKey[l.RecordKey], l)
		}
		r.byOut[l.Outcome]++
	case "batch done":
		r.batches++
	case consumer.LogReady:
		var rd Ready
		if json.Unmarshal(line[j:], &rd) == nil {
			r.ready = append(r.ready, rd)
		}
	}
}

// All returns every record line logged so far, grouped by message.
func (r *Records) All() []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []Line
	for _, lines := range r.byMsg {
		all = append(all, lines...)
	}
	return all
}

// Of returns what was logged for a message, in order.
func (r *Records) Of(messageID string) []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Line(nil), r.byMsg[messageID]...)
}

// OfKey returns what was logged for the records of a storage key (as the
// consumer logs it: System.StorageKey), in order.
func (r *Records) OfKey(storageKey string) []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Line(nil), r.byKey[storageKey]...)
}

// Reason is the last error logged for a message.
func (r *Records) Reason(messageID string) string {
	lines := r.Of(messageID)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Error != "" {
			return lines[i].Error
		}
	}
	return ""
}

// Outcomes counts the logged outcomes ("executed", "duplicate", …).
func (r *Records) Outcomes() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.byOut))
	for k, v := range r.byOut {
		out[k] = v
	}
	return out
}

// Ready returns the init lines of every consumer instance started so far
// (a restarted instance logs again), in order.
func (r *Records) Ready() []Ready {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Ready(nil), r.ready...)
}
