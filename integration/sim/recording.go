package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/sim/ddbmodel"
	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// Recording is what a schedule sent to its store's server, in the order the
// server saw it, with the fault each request met: the model check replays
// it against the real server (DynamoDB Local, redis-server) and compares,
// request by request, what the model answered with what the server does.
type Recording struct {
	Cfg   Config
	Calls []WireCall
	// Tables is every DynamoDB table of the model at the end, by name.
	Tables map[string][]map[string]types.AttributeValue
	// Keys is the Redis model's keyspace at the end.
	Keys []redismodel.Entry
	// End is when the schedule ended, virtual time since its start.
	End time.Duration
}

// WireCall is one request of a recording.
type WireCall struct {
	// Fault is what met the request: faultNone (a late request too),
	// faultRefuse or faultThrottle (never applied; its reply is the
	// refusal), faultLost (applied, its reply lost).
	Fault fault
	At    time.Duration // virtual time
	// Existed: the record the request is about was there (Redis: not
	// expired) before it, by the model.
	Existed  bool
	OOM      bool // Redis: the server was out of memory
	DynamoDB *ddbmodel.Call
	Redis    *redismodel.Call
}

// Refused reports whether the request never reached the server.
func (c WireCall) Refused() bool { return c.Fault == faultRefuse || c.Fault == faultThrottle }

// Lost reports whether the request applied and its reply was lost.
func (c WireCall) Lost() bool { return c.Fault == faultLost }

// RunRecorded runs the schedule of cfg as Run does, and records it.
func RunRecorded(t *testing.T, cfg Config) (res Result, rec *Recording) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(cfg)
		w.rec = &Recording{Cfg: cfg}
		res = w.run()
		rec = w.rec
		rec.End = w.since()
		switch b := w.store.(type) {
		case *dynamoBackend:
			rec.Tables = map[string][]map[string]types.AttributeValue{
				receiptsTable: b.srv.Items(receiptsTable), ledgerTable: b.srv.Items(ledgerTable),
			}
		case *redisBackend:
			rec.Keys = b.srv.Dump()
		}
	})
	return res, rec
}

// note appends a request to the recording, if there is one, and returns
// its index (-1 without a recording).
func (w *world) note(c WireCall) int {
	if w.rec == nil {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c.At = w.since()
	w.rec.Calls = append(w.rec.Calls, c)
	return len(w.rec.Calls) - 1
}

// markLost marks the recorded request i as applied with its reply lost.
func (w *world) markLost(i int) {
	if i < 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rec.Calls[i].Fault = faultLost
}
