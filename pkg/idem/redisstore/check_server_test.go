package redisstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// TestCheckReplicasWithoutWait: on a primary with a replica connected,
// Check names the replica and WithWaitReplicas when the Store does not
// wait (a failover to the replica loses what it lacks: ErrNotDurable, a
// trade-off a caller may accept, as TestFailoverLosesReceipt measures), and
// nothing when it does; a primary alone is not a finding.
func TestCheckReplicasWithoutWait(t *testing.T) {
	durable := []string{"--appendonly", "yes"}
	primary := newServer(t, durable...)
	if err := newStore(t, primary.client).Check(within(t, 10*time.Second)); err != nil {
		t.Fatalf("Check on a primary alone: %v, want nil", err)
	}
	replicaOf(t, primary, durable...)
	err := newStore(t, primary.client).Check(within(t, 10*time.Second))
	if !errors.Is(err, redisstore.ErrNotDurable) || errors.Is(err, idem.ErrInvalid) ||
		!strings.Contains(err.Error(), "1 replicas connected") || !strings.Contains(err.Error(), "WithWaitReplicas") {
		t.Fatalf("Check on a primary with a replica, no WithWaitReplicas: %v; want ErrNotDurable naming the replica and WithWaitReplicas", err)
	}
	t.Logf("Check without WAIT: %v", err)
	waiting := newStore(t, primary.client, redisstore.WithWaitReplicas(1, time.Second))
	if err := waiting.Check(within(t, 10*time.Second)); err != nil {
		t.Fatalf("Check with WithWaitReplicas(1): %v, want nil", err)
	}
}
