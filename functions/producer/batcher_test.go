package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// callSQS records every SendMessageBatch call. It can fail calls as a
// whole, fail entries, and block calls until released (ignoring ctx, like a
// client slow to give up).
type callSQS struct {
	err       error           // every call fails with it
	failLeft  map[string]int  // key → entries still to fail (not the sender's fault)
	release   chan struct{}   // when set, calls wait for it to close (or waitLimit)
	started   chan struct{}   // when set, gets a value as the first call starts
	mu        sync.Mutex      //
	calls     [][]string      // keys per call
	payloads  []int           // payload bytes per call
	deadlines []time.Time     // ctx deadline per call (zero: none)
	active    int             // calls not returned yet
	accepted  map[string]bool // keys accepted
}

func (f *callSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	f.active++
	var ids []string
	payload := 0
	for _, e := range in.Entries {
		ids = append(ids, aws.ToString(e.MessageAttributes[keyAttribute].StringValue))
		payload += len(aws.ToString(e.MessageBody))
		for name, v := range e.MessageAttributes {
			payload += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue))
		}
	}
	d, _ := ctx.Deadline()
	f.calls, f.payloads, f.deadlines = append(f.calls, ids), append(f.payloads, payload), append(f.deadlines, d)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	if f.started != nil {
		select {
		case f.started <- struct{}{}:
		default: // told already
		}
	}
	if f.release != nil {
		select {
		case <-f.release:
		case <-time.After(waitLimit):
			return nil, errors.New("callSQS: never released")
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if len(in.Entries) > maxBatch || payload > maxBatchBytes {
		return nil, &smithy.GenericAPIError{Code: "BatchRequestTooLong", Message: fmt.Sprint(payload, " bytes"), Fault: smithy.FaultClient}
	}
	out := &sqs.SendMessageBatchOutput{}
	for i, e := range in.Entries {
		if f.failLeft[ids[i]] > 0 {
			f.failLeft[ids[i]]--
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again")})
			continue
		}
		if f.accepted == nil {
			f.accepted = map[string]bool{}
		}
		f.accepted[ids[i]] = true
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("msg-" + ids[i])})
	}
	return out, nil
}

func (f *callSQS) snapshot() (calls [][]string, payloads []int, deadlines []time.Time, active int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls), slices.Clone(f.payloads), slices.Clone(f.deadlines), f.active
}

func (f *callSQS) sentIDs() []string {
	calls, _, _, _ := f.snapshot()
	var all []string
	for _, c := range calls {
		all = append(all, c...)
	}
	slices.Sort(all)
	return all
}

func recordStatus(t *testing.T, store *idemtest.MemoryStore, id string) (idem.Status, bool) {
	t.Helper()
	g, _ := idem.New(store, contract.ProducerNamespace)
	rec, ok, err := store.Get(context.Background(), g.StorageKey(id))
	if err != nil {
		t.Fatal(err)
	}
	return rec.Status, ok
}

// An entry whose context ends before its batch goes is taken out of the
// batch: it is never sent, and its linger timer does not outlive it.
func TestEntryContextEndsBeforeFlush(t *testing.T) {
	type sub struct {
		id      string
		timeout time.Duration // 0: the context has ended before submit
	}
	tests := []struct {
		name     string
		subs     []sub
		wantSent []string
	}{
		{"deadline before the linger", []sub{{"a", 20 * time.Millisecond}}, nil},
		{"ended before submit", []sub{{"a", 0}}, nil},
		{"one of two ends, the other goes", []sub{{"a", 20 * time.Millisecond}, {"b", 5 * time.Second}}, []string{"b"}},
		{"all of three end", []sub{{"a", 10 * time.Millisecond}, {"b", 20 * time.Millisecond}, {"c", 30 * time.Millisecond}}, nil},
	}
	const linger = 300 * time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := &callSQS{}
			p := newProducer(t, idemtest.NewMemoryStore(), client, nil)
			b := newBatcher(context.Background(), p.sendBatch, linger)
			start := time.Now()
			errs := make([]error, len(tt.subs))
			var wg sync.WaitGroup
			for i, s := range tt.subs {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
					defer cancel()
					_, errs[i] = b.submit(ctx, newEntry(s.id, "{}"))
				})
			}
			wg.Wait()
			b.wait()
			if sent := client.sentIDs(); !slices.Equal(sent, tt.wantSent) {
				t.Errorf("sent %v, want %v", sent, tt.wantSent)
			}
			for i, s := range tt.subs {
				want := slices.Contains(tt.wantSent, s.id)
				if (errs[i] == nil) != want {
					t.Errorf("%s: err = %v, want sent %v", s.id, errs[i], want)
				}
				if errs[i] != nil && (errors.Is(errs[i], ErrSendUnknown) || !strings.Contains(errs[i].Error(), "not sent")) {
					t.Errorf("%s: err = %v, want a plain \"not sent\"", s.id, errs[i])
				}
			}
			if len(tt.wantSent) == 0 {
				// The timer was stopped with the last entry: nothing waits for it.
				if d := time.Since(start); d >= linger {
					t.Errorf("took %s, the linger timer outlived its entries", d)
				}
				time.Sleep(linger + 50*time.Millisecond)
				if calls, _, _, _ := client.snapshot(); len(calls) != 0 {
					t.Errorf("calls %v after the entries were gone", calls)
				}
			}
		})
	}

	t.Run("the effect's context ends before the batch goes", func(t *testing.T) {
		// Two messages; the second one's Acquire waits until the first
		// one's record is released, so the first one's batch waits for it
		// (a worker that may still submit) until its 300 ms lease has run
		// out, however loaded the machine.
		mem, client := idemtest.NewMemoryStore(), &callSQS{}
		store := &secondAcquireWaits{MemoryStore: mem}
		p := newProducer(t, store, client, map[string]string{consumer.EnvLease: "300ms", consumer.EnvSafetyMargin: "50ms"})
		out := run(t, p, messages("a", "b"))
		if store.waited != nil {
			t.Fatal(store.waited)
		}
		// The second one's lease has run out by the time it returns: it is
		// not sent either.
		if out.Failed != 2 {
			t.Fatalf("out = %+v, want two not-sent failures", out)
		}
		for _, f := range out.Failures {
			if !strings.Contains(f.Reason, "not sent") {
				t.Errorf("failure %+v, want not sent", f)
			}
			if st, _ := recordStatus(t, mem, f.Key); st != idem.StatusFailed {
				t.Errorf("record of %s %s, want FAILED (released)", f.Key, st)
			}
		}
		if calls, _, _, _ := client.snapshot(); len(calls) != 0 {
			t.Errorf("released orders were sent: calls %v", calls)
		}
	})
}

// secondAcquireWaits holds the second Acquire until the record of the
// first is FAILED (released).
type secondAcquireWaits struct {
	*idemtest.MemoryStore
	mu     sync.Mutex
	first  string
	calls  int
	waited error // set when the wait gave up
}

func (s *secondAcquireWaits) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	if n == 1 {
		s.first = a.Key
	}
	first := s.first
	s.mu.Unlock()
	if n == 2 {
		for deadline := time.Now().Add(waitLimit); ; time.Sleep(5 * time.Millisecond) {
			if rec, ok, err := s.MemoryStore.Get(ctx, first); err == nil && ok && rec.Status == idem.StatusFailed {
				break
			}
			if time.Now().After(deadline) {
				s.mu.Lock()
				s.waited = fmt.Errorf("the first record was not released within %s", waitLimit)
				s.mu.Unlock()
				break
			}
		}
	}
	return s.MemoryStore.Acquire(ctx, a)
}

// A batch's calls run until the earliest deadline of its entries.
func TestBatchDeadlineIsEarliest(t *testing.T) {
	client := &callSQS{}
	p := newProducer(t, idemtest.NewMemoryStore(), client, nil)
	b := newBatcher(context.Background(), p.sendBatch, 50*time.Millisecond)
	now := time.Now()
	deadlines := []time.Time{now.Add(3 * time.Second), now.Add(2 * time.Second), now.Add(4 * time.Second)}
	var wg sync.WaitGroup
	for i, d := range deadlines {
		wg.Go(func() {
			ctx, cancel := context.WithDeadline(context.Background(), d)
			defer cancel()
			if _, err := b.submit(ctx, newEntry(fmt.Sprint(i), "{}")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b.wait()
	calls, _, got, _ := client.snapshot()
	if len(calls) != 1 || !got[0].Equal(deadlines[1]) {
		t.Errorf("calls %v with deadlines %v, want one call until %v", calls, got, deadlines[1])
	}
}

// messageOfSize returns a message that counts size bytes toward the
// batch payload.
func messageOfSize(id string, size int) json.RawMessage {
	const skeleton = `{%q:%q,"pad":"%s"}`
	n := size - messageSize(id, fmt.Sprintf(skeleton, contract.KeyField, id, ""))
	return json.RawMessage(fmt.Sprintf(skeleton, contract.KeyField, id, strings.Repeat("x", n)))
}

func TestBatchSplitBySize(t *testing.T) {
	type order struct {
		id   string
		size int
	}
	sized := func(prefix string, n, size int) []order {
		var out []order
		for _, id := range ids(prefix, n) {
			out = append(out, order{id, size})
		}
		return out
	}
	tests := []struct {
		name        string
		orders      []order
		wantCalls   int
		wantPerCall int // most entries in a call
		wantTooBig  []string
	}{
		{"ten small orders, one call", sized("s-", 10, 1<<10), 1, 10, nil},
		{"two halves fill a batch exactly", sized("h-", 2, maxBatchBytes/2), 1, 2, nil},
		{"two halves and a byte, one per call", sized("h-", 2, maxBatchBytes/2+1), 2, 1, nil},
		{"100 KiB orders, two per call", sized("k-", 5, 100<<10), 3, 2, nil},
		{"an order over the limit fails alone", append(sized("s-", 2, 100), order{"big", maxBatchBytes + 1}), 1, 2, []string{"big"}},
		{"an order at the limit goes alone", append(sized("s-", 1, 100), order{"max", maxBatchBytes}), 2, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, client := idemtest.NewMemoryStore(), &callSQS{}
			p := newProducer(t, store, client, nil)
			var in Input
			for _, o := range tt.orders {
				in.Messages = append(in.Messages, messageOfSize(o.id, o.size))
			}
			out := run(t, p, in)
			if out.Sent != len(tt.orders)-len(tt.wantTooBig) || out.Failed != len(tt.wantTooBig) {
				t.Errorf("out = %+v, want %d failed", out, len(tt.wantTooBig))
			}
			for _, f := range out.Failures {
				if !slices.Contains(tt.wantTooBig, f.Key) || !strings.Contains(f.Reason, ErrTooLarge.Error()) {
					t.Errorf("failure %+v", f)
				}
			}
			calls, payloads, _, _ := client.snapshot()
			most := 0
			for i, c := range calls {
				most = max(most, len(c))
				if payloads[i] > maxBatchBytes {
					t.Errorf("call %d: %d bytes", i, payloads[i])
				}
				for _, id := range tt.wantTooBig {
					if slices.Contains(c, id) {
						t.Errorf("call %d sent %s", i, id)
					}
				}
			}
			if len(calls) != tt.wantCalls || most != tt.wantPerCall {
				t.Errorf("calls %v (payloads %v), want %d calls of at most %d", calls, payloads, tt.wantCalls, tt.wantPerCall)
			}
			for _, id := range tt.wantTooBig {
				if _, ok := recordStatus(t, store, id); ok {
					t.Errorf("a record was written for %s", id)
				}
			}
		})
	}
}

// A partial batch goes as soon as no worker is left that could add to it,
// not after the linger (an hour here).
func TestPartialBatchGoesWhenNoWorkerCanJoin(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		in        Input
		wantSizes []int // entries per call, sorted
	}{
		{"every message waits", nil, messages("a", "b", "c"), []int{3}},
		{"a bad message's worker leaves", nil, Input{Messages: append(messages("a", "b").Messages, json.RawMessage(`{"no key": 1}`))}, []int{2}},
		{"fewer workers than messages", map[string]string{contract.EnvProducerConcurrency: "2"}, messages("a", "b", "c"), []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := &callSQS{}
			p := newProducer(t, idemtest.NewMemoryStore(), client, tt.env)
			p.linger = time.Hour
			finished := make(chan Output, 1)
			go func() {
				out, _ := p.Handle(context.Background(), tt.in)
				finished <- out
			}()
			select {
			case <-finished:
			case <-time.After(waitLimit):
				t.Fatalf("Handle still running after %s: the batch waits for its linger", waitLimit)
			}
			calls, _, _, _ := client.snapshot()
			var sizes []int
			for _, c := range calls {
				sizes = append(sizes, len(c))
			}
			slices.Sort(sizes)
			if !slices.Equal(sizes, tt.wantSizes) {
				t.Errorf("calls %v, want sizes %v", calls, tt.wantSizes)
			}
		})
	}
}

// A failed call was retried by the SDK: its entries fail at once. Only the
// failed entries of a call that worked are retried here.
func TestWholeCallErrorNotRetried(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		failLeft   map[string]int
		wantCalls  int
		wantSent   int
		wantReason string
		released   idem.Status // what a failed send's record is released as
	}{
		{"BatchRequestTooLong", &smithy.GenericAPIError{Code: "BatchRequestTooLong", Fault: smithy.FaultClient}, nil, 1, 0, "sender fault", idem.StatusFailed},
		{"InvalidParameterValue", &smithy.GenericAPIError{Code: "InvalidParameterValue", Fault: smithy.FaultClient}, nil, 1, 0, "sender fault", idem.StatusFailed},
		// SQS may have taken the messages: their outcome is unknown.
		{"server fault", &smithy.GenericAPIError{Code: "InternalError", Fault: smithy.FaultServer}, nil, 1, 0, "after the SDK's retries", idem.StatusUnknown},
		{"network error", errors.New("connection reset"), nil, 1, 0, "after the SDK's retries", idem.StatusUnknown},
		{"failed entry is retried", nil, map[string]int{"a": 2}, 3, 2, "", idem.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, client := idemtest.NewMemoryStore(), &callSQS{err: tt.err, failLeft: tt.failLeft}
			p := newProducer(t, store, client, map[string]string{contract.EnvSendAttempts: "3"})
			out := run(t, p, messages("a", "b"))
			if out.Sent != tt.wantSent || out.Failed != 2-tt.wantSent {
				t.Errorf("out = %+v, want %d sent", out, tt.wantSent)
			}
			for _, f := range out.Failures {
				if !strings.Contains(f.Reason, ErrSend.Error()) || !strings.Contains(f.Reason, tt.wantReason) {
					t.Errorf("failure %+v, want %q", f, tt.wantReason)
				}
				if st, _ := recordStatus(t, store, f.Key); st != tt.released {
					t.Errorf("record of %s is %s, want %s (released)", f.Key, st, tt.released)
				}
			}
			if calls, _, _, _ := client.snapshot(); len(calls) != tt.wantCalls {
				t.Errorf("calls %v, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// Handle returns only once every send has finished, even a send its order
// gave up on.
func TestHandleWaitsForSends(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		hold       time.Duration // how long the call blocks once the effect gave up or started
		wantSent   int
		wantReason string
	}{
		{"call in flight past the effect's deadline", map[string]string{consumer.EnvLease: "300ms", consumer.EnvSafetyMargin: "50ms"},
			200 * time.Millisecond, 0, ErrSendUnknown.Error()},
		{"call finishes in time", nil, 200 * time.Millisecond, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			store := idemtest.NewMemoryStore()
			client := &callSQS{release: make(chan struct{}), started: make(chan struct{}, 1)}
			p := newProducer(t, store, client, tt.env)
			p.linger = time.Millisecond
			type done struct {
				out    Output
				active int
			}
			finished := make(chan done, 1)
			go func() {
				out, _ := p.Handle(context.Background(), messages("a"))
				_, _, _, active := client.snapshot()
				finished <- done{out, active}
			}()
			select {
			case <-client.started:
			case <-time.After(waitLimit):
				t.Fatal("no SendMessageBatch call started")
			}
			if tt.wantSent == 0 {
				// Wait for the order to give up: its record is released.
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
					if st, _ := recordStatus(t, store, "a"); st == idem.StatusFailed || st == idem.StatusUnknown {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the order did not give up")
					}
				}
			}
			select {
			case d := <-finished:
				t.Fatalf("Handle returned %+v while a send was in flight", d.out)
			case <-time.After(tt.hold):
			}
			close(client.release)
			var d done
			select {
			case d = <-finished:
			case <-time.After(waitLimit):
				t.Fatal("Handle did not return after the call was released")
			}
			if d.active != 0 {
				t.Errorf("%d calls still running when Handle returned", d.active)
			}
			if d.out.Sent != tt.wantSent || (tt.wantReason != "" && !strings.Contains(d.out.Failures[0].Reason, tt.wantReason)) {
				t.Errorf("out = %+v, want %d sent, reason %q", d.out, tt.wantSent, tt.wantReason)
			}
			// No goroutine of the invocation is left behind.
			for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("%d goroutines, %d before Handle", runtime.NumGoroutine(), before)
					break
				}
			}
		})
	}
}
