package redismodel_test

import (
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// TestConformance: redisstore on the model passes the Store conformance
// suite, as it does on a real server.
func TestConformance(t *testing.T) {
	store, err := redisstore.New(redismodel.New(time.Now))
	if err != nil {
		t.Fatal(err)
	}
	idemtest.TestStore(t, func(*testing.T) idem.Store { return store })
}
