//go:build integration

package ddbmodel

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestDifferentialRandom sends the same seeded random requests to
// DynamoDB Local and to the model, compares every reply, then the tables.
func TestDifferentialRandom(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			model := New()
			tables := make([]genTable, len(genTables))
			for i, gt := range genTables {
				gt.name = fmt.Sprintf("%s-%d", gt.name, seed)
				tables[i] = gt
				createLocal(t, model, gt.name, gt.pk, gt.sk)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			g := newGenerator(seed, tables)
			const requests = 2500
			codes := map[string]int{}
			mismatches := 0
			for i := range requests {
				op, in := g.request()
				want := Send(ctx, local, op, in)
				got := Send(ctx, model, op, in)
				codes[normalize(want).code]++
				if !Equivalent(want, got) {
					mismatches++
					if mismatches <= 20 {
						t.Errorf("request %d %s %s\n\tDynamoDB Local %s\n\tmodel          %s", i, op, describeInput(in), normalize(want), normalize(got))
					}
				}
			}
			for _, gt := range tables {
				compareTables(t, model, gt.name)
			}
			t.Logf("%d requests compared, %d mismatches; replies by error code: %v", requests, mismatches, codes)
		})
	}
}
