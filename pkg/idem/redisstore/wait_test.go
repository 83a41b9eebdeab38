package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// TestWithWaitReplicas: New accepts only what can work: a client that sends
// a script and its WAIT down one connection, at least one replica, a WAIT
// timeout of whole milliseconds that the client's ReadTimeout leaves time
// to read.
func TestWithWaitReplicas(t *testing.T) {
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: 3 * time.Second})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	patient := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: -1})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { plain.Close(); cluster.Close(); patient.Close(); ring.Close() })
	for _, tc := range []struct {
		name    string
		client  Client
		n       int
		timeout time.Duration
		ok      bool
	}{
		{"client", plain, 1, time.Second, true},
		{"cluster client", cluster, 2, 500 * time.Millisecond, true},
		{"half the read timeout", plain, 1, 1500 * time.Millisecond, true},
		{"more than half the read timeout", plain, 1, 1501 * time.Millisecond, false},
		{"no read timeout", patient, 1, time.Minute, true},
		{"no replica", plain, 0, time.Second, false},
		{"wait for ever", plain, 1, 0, false},
		{"under a millisecond", plain, 1, time.Microsecond, false},
		{"a fake: Eval and EvalSha only", &fakeClient{}, 1, time.Second, false},
		{"a universal client holding a ring", redis.UniversalClient(ring), 1, time.Second, false},
	} {
		_, err := New(tc.client, WithWaitReplicas(tc.n, tc.timeout))
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("%s: New with WithWaitReplicas(%d, %s): %v; want ok = %v", tc.name, tc.n, tc.timeout, err, tc.ok)
		}
	}
}
