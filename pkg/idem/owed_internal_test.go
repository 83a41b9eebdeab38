package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// refusingStore takes every record and refuses every Complete: the
// receipt is owed.
type refusingStore struct{}

func (refusingStore) Acquire(_ context.Context, a Acquisition) (Record, bool, error) {
	return Record{Key: a.Key, Status: StatusInProgress, Lease: a.Lease, LeaseUntil: a.LeaseUntil, Attempts: 1}, true, nil
}

func (refusingStore) Complete(context.Context, string, string, Completion) error {
	return errors.New("ThrottlingException")
}

func (refusingStore) Release(context.Context, string, string, Released) error { return nil }

func (refusingStore) Capabilities() Capabilities {
	return Capabilities{MaxResultSize: 1 << 20, MaxKeySize: MaxStorageKeyLen}
}

// TestOwedReceiptHoldsTheCappedResult: an owed receipt keeps what the
// receipt would store (the result up to the cap), not the effect's whole
// result: a 48 MiB result must not stay in memory until the receipt
// expires.
func TestOwedReceiptHoldsTheCappedResult(t *testing.T) {
	g, err := New(refusingStore{}, "ns", WithMaxResultSize(16))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 8<<20)
	res, err := g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) { return big, nil })
	if res.Outcome != Unconfirmed || !errors.Is(err, ErrUnconfirmed) {
		t.Fatalf("%+v, %v; want Unconfirmed", res, err)
	}
	r, ok := g.owed.get(g.StorageKey("k"), time.Now())
	if !ok {
		t.Fatal("no receipt owed")
	}
	if held := r.bytes(); held > 16 {
		t.Fatalf("the owed receipt holds %d bytes of result; want at most the 16-byte cap", held)
	}
	// A copy while the store still fails is Unconfirmed again, and tells
	// that the result was not kept.
	res, err = g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) { t.Fatal("ran twice"); return nil, nil })
	if res.Outcome != Unconfirmed || !res.ResultOmitted || len(res.Value) != 0 {
		t.Fatalf("copy: %+v, %v; want Unconfirmed, result omitted", res, err)
	}
}

// TestOwedResultsWithinBudget: past owedResultBudget bytes of results, a
// receipt is still owed, without its result; expired receipts are swept.
func TestOwedResultsWithinBudget(t *testing.T) {
	o := newOwedReceipts()
	now := time.Now()
	chunk := bytes.Repeat([]byte("r"), owedResultBudget/4+1)
	for i := range 8 {
		o.put(string(rune('a'+i)), receipt{completion: Completion{Result: chunk, ExpiresAt: now.Add(time.Hour)}}, now)
	}
	if o.resultBytes > owedResultBudget {
		t.Fatalf("%d bytes of owed results held; want at most %d", o.resultBytes, owedResultBudget)
	}
	for i := range 8 {
		r, ok := o.get(string(rune('a'+i)), now)
		if !ok {
			t.Fatalf("receipt %d dropped", i)
		}
		if kept := r.bytes() > 0; kept != (i < 3) || r.completion.ResultOmitted == kept {
			t.Fatalf("receipt %d: result kept %v, omitted %v; want the first 3 with their result", i, kept, r.completion.ResultOmitted)
		}
	}
	o.remove("a", "")
	if o.resultBytes != 2*len(chunk) {
		t.Fatalf("after a removal %d bytes; want %d", o.resultBytes, 2*len(chunk))
	}
	// Expired entries go at the next sweep.
	later := now.Add(2 * time.Hour)
	for i := range owedSweepMin {
		o.put(fmt.Sprint("later-", i), receipt{completion: Completion{ExpiresAt: later.Add(time.Hour)}}, later)
	}
	if _, ok := o.items["b"]; ok || o.resultBytes != 0 {
		t.Fatalf("expired receipts kept after a sweep (%d entries, %d bytes)", len(o.items), o.resultBytes)
	}
}

// TestOwedKeepsTheLatestAttempt: an earlier attempt's receipt neither
// replaces nor removes the one of the attempt that took the record over.
func TestOwedKeepsTheLatestAttempt(t *testing.T) {
	o := newOwedReceipts()
	now := time.Now()
	exp := Completion{ExpiresAt: now.Add(time.Hour)}
	o.put("k", receipt{token: "t2", attempts: 2, completion: exp}, now)
	o.put("k", receipt{token: "t1", attempts: 1, completion: exp}, now)
	if r, _ := o.get("k", now); r.token != "t2" {
		t.Fatalf("owed %q after an earlier attempt's put; want t2", r.token)
	}
	o.remove("k", "t1")
	if r, ok := o.get("k", now); !ok || r.token != "t2" {
		t.Fatalf("owed %q, %v after removing an earlier attempt's; want t2", r.token, ok)
	}
	o.remove("k", "t2")
	if _, ok := o.get("k", now); ok {
		t.Fatal("owed after its own removal")
	}
	// An expired later attempt's receipt gives way.
	o.put("k", receipt{token: "t3", attempts: 3, completion: Completion{ExpiresAt: now.Add(-time.Hour)}}, now)
	o.put("k", receipt{token: "t1", attempts: 1, completion: exp}, now)
	if r, _ := o.get("k", now); r.token != "t1" {
		t.Fatalf("owed %q; want t1 over an expired receipt", r.token)
	}
}
