package idemtest_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

type increment struct{ id string }

func TestMemoryStore(t *testing.T) {
	var store *idemtest.MemoryStore
	idemtest.TestStore(t,
		func(t *testing.T) idem.Store {
			store = idemtest.NewMemoryStore()
			return store
		},
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
