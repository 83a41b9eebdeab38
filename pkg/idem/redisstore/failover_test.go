package redisstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// A primary and a replica on loopback, failed over by hand as Sentinel
// would: the primary is killed and the replica promoted, with the writes
// its link held back lost. Each test counts the runs of the effect across
// the two processes, the one that wrote to the old primary and a copy of
// the message that comes to the new one.

// failover kills primary, drops what its link to replica held, and
// promotes replica.
func failover(t *testing.T, primary, replica *server, k *link) {
	t.Helper()
	primary.kill()
	k.sever()
	promote(t, replica)
}

// TestFailoverLosesReceipt: a receipt acknowledged by the primary and not
// yet by the replica is lost when the replica is promoted, and a copy runs
// the effect again. WAIT turns that into Unconfirmed, a loss the caller is
// told of, and with a replica that acknowledges, the promoted replica has
// the receipt.
func TestFailoverLosesReceipt(t *testing.T) {
	t.Run("without WAIT a copy runs the effect again", func(t *testing.T) {
		primary := newServer(t)
		replica, k := replicaOf(t, primary)
		var e effects
		first, _ := guardOn(t, primary.client)
		k.hold() // the replica gets nothing from now on
		if res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.Executed {
			t.Fatalf("first: %v, %v; want Executed", res.Outcome, err)
		}
		failover(t, primary, replica, k)
		second, _ := guardOn(t, replica.client)
		res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
		runs, _ := e.counts()
		if res.Outcome != idem.Executed || runs != 2 {
			t.Fatalf("copy after the failover: %v, %v; effect ran %d times, want 2 (the receipt lost)", res.Outcome, err, runs)
		}
	})

	t.Run("WAIT with the replica cut off: Unconfirmed and owed, never silent", func(t *testing.T) {
		primary := newServer(t)
		replica, k := replicaOf(t, primary)
		var e effects
		client := newFollower(t, primary)
		first, firstStore := guardOn(t, client.Client, redisstore.WithWaitReplicas(1, 100*time.Millisecond))
		// The lease is acknowledged; the link fails while the effect runs.
		res, err := first.Do(within(t, 2*time.Second), "k", nil, e.fn(k.hold))
		if res.Outcome != idem.Unconfirmed || !errors.Is(err, idem.ErrUnconfirmed) || !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("first: %v, %v; want Unconfirmed, ErrNotReplicated", res.Outcome, err)
		}
		if rec := record(t, first, firstStore, "k"); rec.Status != idem.StatusCompleted {
			t.Fatalf("on the primary: %+v; want the receipt, written but not replicated", rec)
		}

		failover(t, primary, replica, k)
		second, _ := guardOn(t, replica.client)
		if res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.InProgress {
			t.Fatalf("copy after the failover: %v, %v; want InProgress (the lease was replicated)", res.Outcome, err)
		}
		// A replica for the new primary; the first process writes the
		// receipt it owes instead of running the effect.
		replicaOf(t, replica)
		client.moveTo(replica)
		if res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.Duplicate {
			t.Fatalf("first again: %v, %v; want Duplicate (the owed receipt written)", res.Outcome, err)
		}
		if res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.Duplicate {
			t.Fatalf("copy again: %v, %v; want Duplicate", res.Outcome, err)
		}
		if runs, _ := e.counts(); runs != 1 {
			t.Fatalf("effect ran %d times, want 1", runs)
		}
	})

	t.Run("WAIT with the replica healthy: the promoted replica has the receipt", func(t *testing.T) {
		primary := newServer(t)
		replica, k := replicaOf(t, primary)
		var e effects
		first, _ := guardOn(t, primary.client, redisstore.WithWaitReplicas(1, time.Second))
		if res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.Executed {
			t.Fatalf("first: %v, %v; want Executed", res.Outcome, err)
		}
		failover(t, primary, replica, k)
		second, secondStore := guardOn(t, replica.client)
		res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
		if runs, _ := e.counts(); res.Outcome != idem.Duplicate || runs != 1 {
			t.Fatalf("copy after the failover: %v, %v; effect ran %d times, want Duplicate and 1", res.Outcome, err, runs)
		}
		if rec := record(t, second, secondStore, "k"); rec.Status != idem.StatusCompleted || string(rec.Result) != "done" {
			t.Fatalf("on the promoted replica: %+v; want the receipt", rec)
		}
	})
}

// TestFailoverLosesLease: a lease acknowledged by the primary and not yet
// by the replica is lost when the replica is promoted, and a copy runs the
// effect while the first attempt still runs it. With WAIT the acquire fails
// before the effect when the replica cannot acknowledge, and the lease
// survives the failover when it can.
func TestFailoverLosesLease(t *testing.T) {
	t.Run("without WAIT two runs at once", func(t *testing.T) {
		primary := newServer(t)
		replica, k := replicaOf(t, primary)
		var e effects
		first, _ := guardOn(t, primary.client)
		k.hold()
		started, finish, done := make(chan struct{}), make(chan struct{}), make(chan idem.Result, 1)
		go func() {
			res, _ := first.Do(within(t, 1500*time.Millisecond), "k", nil, e.fn(func() { close(started); <-finish }))
			done <- res
		}()
		waitChan(t, started, "the first effect to start")
		failover(t, primary, replica, k)
		second, _ := guardOn(t, replica.client)
		res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
		close(finish)
		runs, most := e.counts()
		if res.Outcome != idem.Executed || runs != 2 || most != 2 {
			t.Fatalf("copy during the first run: %v, %v; %d runs, %d at once; want Executed, 2 at once", res.Outcome, err, runs, most)
		}
		// The first attempt's receipt goes to a dead primary: told, not silent.
		if res := waitResult(t, done); res.Outcome != idem.Unconfirmed {
			t.Fatalf("first: %v, want Unconfirmed", res.Outcome)
		}
	})

	t.Run("WAIT with the replica cut off: the acquire fails before the effect", func(t *testing.T) {
		primary := newServer(t)
		replica, k := replicaOf(t, primary)
		var e effects
		first, firstStore := guardOn(t, primary.client, redisstore.WithWaitReplicas(1, 100*time.Millisecond))
		k.hold()
		res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
		if runs, _ := e.counts(); res.Outcome != idem.StoreError || !errors.Is(err, redisstore.ErrNotReplicated) || runs != 0 {
			t.Fatalf("first: %v, %v; effect ran %d times; want StoreError, ErrNotReplicated, no run", res.Outcome, err, runs)
		}
		// The lease written stays on the primary until it ends, held by
		// nobody, fenced.
		if rec := record(t, first, firstStore, "k"); rec.Status != idem.StatusInProgress || time.Until(rec.LeaseUntil) < deployLease/2 {
			t.Fatalf("on the primary: %+v; want the lease left IN_PROGRESS", rec)
		}
		failover(t, primary, replica, k)
		second, _ := guardOn(t, replica.client)
		res, err = second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
		if runs, most := e.counts(); res.Outcome != idem.Executed || runs != 1 || most != 1 {
			t.Fatalf("copy after the failover: %v, %v; %d runs, %d at once; want one run", res.Outcome, err, runs, most)
		}
	})

	t.Run("WAIT with the replica healthy: the lease survives, a copy waits", func(t *testing.T) {
		primary := newServer(t)
		replica, k := replicaOf(t, primary)
		var e effects
		client := newFollower(t, primary)
		first, _ := guardOn(t, client.Client, redisstore.WithWaitReplicas(1, time.Second))
		started, finish, done := make(chan struct{}), make(chan struct{}), make(chan idem.Result, 1)
		go func() {
			res, _ := first.Do(within(t, 20*time.Second), "k", nil, e.fn(func() { close(started); <-finish }))
			done <- res
		}()
		waitChan(t, started, "the first effect to start")
		failover(t, primary, replica, k)
		second, _ := guardOn(t, replica.client)
		if res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.InProgress {
			t.Fatalf("copy during the first run: %v, %v; want InProgress", res.Outcome, err)
		}
		replicaOf(t, replica)
		client.moveTo(replica)
		close(finish)
		if res := waitResult(t, done); res.Outcome != idem.Executed {
			t.Fatalf("first: %v, want Executed (its receipt on the new primary)", res.Outcome)
		}
		if runs, most := e.counts(); runs != 1 || most != 1 {
			t.Fatalf("%d runs, %d at once; want 1", runs, most)
		}
	})
}

func waitChan(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30s for %s", what)
	}
}

func waitResult(t *testing.T, c <-chan idem.Result) idem.Result {
	t.Helper()
	select {
	case res := <-c:
		return res
	case <-time.After(30 * time.Second):
		t.Fatal("waited 30s for the first attempt's result")
		return idem.Result{}
	}
}
