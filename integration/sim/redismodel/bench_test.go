package redismodel_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// BenchmarkStore measures the model under the real Store: an Acquire and a
// Complete, two script runs, on one of a thousand keys, each time past the
// record's expiry so that the acquire takes it again; it reports the cost
// of one script run.
func BenchmarkStore(b *testing.B) {
	start := time.Now()
	model := redismodel.New(func() time.Time { return start }) // no key reaches its TTL
	store, err := redisstore.New(model)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	result := []byte("a result of a few dozen bytes, as most are")
	i := 0
	for b.Loop() {
		i++
		key := "k" + strconv.Itoa(i%1000)
		now := start.Add(time.Duration(i) * time.Hour)
		expires := now.Add(time.Minute)
		a := idem.Acquisition{Key: key, Lease: "lease", LeaseUntil: now.Add(time.Second), ExpiresAt: expires, Fingerprint: "fp", Now: now}
		if _, ok, err := store.Acquire(ctx, a); !ok || err != nil {
			b.Fatalf("Acquire: %v, %v", ok, err)
		}
		if err := store.Complete(ctx, key, "lease", idem.Completion{Result: result, ExpiresAt: expires, Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(2*b.N), "µs/call")
}
