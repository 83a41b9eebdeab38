package idemtest_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// A store author runs the conformance suite from a test of the store's
// package. newStore may return one shared store; WithCounter lets the suite
// check that transactional writes land exactly once (here: writes of type
// increment, counted in the memory store's log).
func ExampleTestStore() {
	type increment struct{ id string }
	_ = func(t *testing.T) { // func TestMyStore(t *testing.T) in your _test.go file
		store := idemtest.NewMemoryStore() // your store
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
}
