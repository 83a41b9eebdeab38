//go:build sqsidem_faults

package consumer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHookNamesTheInvocation: every fault hook call carries the request id
// of the invocation at the point, so that a harness running several
// invocations in one process knows whose fault it is; the fault lines of
// the log carry it too.
func TestHookNamesTheInvocation(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // key → request id, per call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		q := r.URL.Query()
		got[q.Get("point")+" "+q.Get("key")] = q.Get(FaultHookRequestID)
		w.WriteHeader(http.StatusTeapot) // logged at DEBUG
	}))
	t.Cleanup(srv.Close)
	hs := newFaultyHarness(t, map[string]string{EnvFaultHookURL: srv.URL + "/hook"})
	p := &process{h: hs.h, logs: hs.logs, metrics: &syncBuffer{}}
	var wg sync.WaitGroup
	for i := range invocations {
		wg.Go(func() {
			p.invoke(t, fmt.Sprintf("req-%d", i), time.Now().Add(time.Minute), order(fmt.Sprintf("m-%d", i), fmt.Sprintf("o-%d", i)))
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range invocations {
		for _, point := range []string{FaultBeforeEffect, FaultAfterEffect} {
			if rid := got[fmt.Sprintf("%s o-%d", point, i)]; rid != fmt.Sprintf("req-%d", i) {
				t.Errorf("%s of o-%d: request id %q, want req-%d", point, i, rid, i)
			}
		}
	}
	hooks := 0
	for _, doc := range lines(t, hs.logs) {
		if str(doc, "msg") == "fault hook" {
			hooks++
			if !strings.HasPrefix(str(doc, "request_id"), "req-") {
				t.Errorf("fault hook line without its request id: %v", doc)
			}
		}
	}
	if hooks != 2*invocations {
		t.Errorf("%d fault hook lines, want %d", hooks, 2*invocations)
	}
}
