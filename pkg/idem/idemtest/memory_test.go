package idemtest_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

type increment struct{ id string }

func TestMemoryStore(t *testing.T) {
	store := idemtest.NewMemoryStore() // shared: subtests run in parallel on their own keys
	idemtest.TestStore(t,
		func(t *testing.T) idem.Store { return store },
		idemtest.WithCounter(
			func(id string) any { return increment{id} },
			func(_ context.Context, id string) (int, error) {
				n := 0
				for _, w := range store.Writes() {
					if w == (increment{id}) {
						n++
					}
				}
				return n, nil
			}),
	)
}
