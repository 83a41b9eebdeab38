package system

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Records collects the per-record lines the consumers log (sqsbatch's
// "record done" / "record failed", one line per record), so a test can
// say what happened to each message and why a message ended in the DLQ.
type Records struct {
	mu      sync.Mutex
	buf     []byte
	byMsg   map[string][]Line
	byOut   map[string]int
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

// NewRecords returns an empty Records; write the consumers' log to it.
func NewRecords() *Records {
	return &Records{byMsg: map[string][]Line{}, byOut: map[string]int{}}
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
	case "record done", "record failed", "record done without receipt", "record requeued":
		r.byMsg[l.MessageID] = append(r.byMsg[l.MessageID], l)
		r.byOut[l.Outcome]++
	case "batch done":
		r.batches++
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
