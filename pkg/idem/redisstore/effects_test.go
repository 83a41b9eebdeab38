package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// effects counts the runs of an effect across the Guards of a test (the
// processes of a deployment), and the most that ran at once.
type effects struct {
	mu      sync.Mutex
	runs    int
	running int
	most    int
}

// fn is the effect; during runs inside it, while it counts as running.
func (e *effects) fn(during func()) idem.Func {
	return func(context.Context) ([]byte, error) {
		e.mu.Lock()
		e.runs++
		e.running++
		e.most = max(e.most, e.running)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.running--
			e.mu.Unlock()
		}()
		if during != nil {
			during()
		}
		return []byte("done"), nil
	}
}

func (e *effects) counts() (runs, most int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs, e.most
}

// deployLease is the lease of the Guards of the deployment tests: long, so
// that a lease left behind is still live when a copy comes.
const deployLease = 30 * time.Second

// guardOn is a Guard over client, one process of a deployment.
func guardOn(t *testing.T, client redisstore.Client, opts ...redisstore.Option) (*idem.Guard, *redisstore.Store) {
	t.Helper()
	s, err := redisstore.New(client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	g, err := idem.New(s, "deploy", idem.WithLease(deployLease), idem.WithSafetyMargin(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return g, s
}

// record reads key's record through s, failing t when it cannot.
func record(t *testing.T, g *idem.Guard, s *redisstore.Store, key string) idem.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, _, err := s.Get(ctx, g.StorageKey(key))
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return rec
}

// within is a context for one call of a test, ended with it.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
