package chaos

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Dynamo is the fault mix on the Lambdas' DynamoDB traffic, and a count of
// that traffic by who sent it (the producer's guard, the consumer's guard
// and effect) and by operation.
//
// In lease mode the template's effect makes no DynamoDB request: it is a
// call to the partner, whose faults — refused, applied with its reply lost,
// answered past the deadline, an outage — the partner injects
// (PartnerChaos); every consumer request here is the receipt store's, and
// gets the whole mix. In transactional mode the effect's writes commit
// with the receipt, and lost acks on them are exactly what that mode must
// survive, so they are injected too.
//
// One exception remains for an effect that does write DynamoDB itself in
// lease mode (a request to another table than the receipts', counted as
// "consumer effect …": none in the template): a lost acknowledgement there
// would make the SDK retry an applied write, a double effect of the
// effect's own retry that no idempotency record can see (docs/template.md's
// advice: pass the key downstream). It becomes a 500 instead, which
// DynamoDB did not apply.
type Dynamo struct {
	Rates        Rates
	ReceiptTable string
	LeaseMode    bool
	Seed         uint64
	// Outage throttles every request of the consumers for a while (Begin
	// starts its clock).
	Outage Outage

	once   sync.Once
	mu     sync.Mutex
	rng    *rand.Rand
	outage [2]time.Time   // from, to
	counts map[string]int // "consumer UpdateItem" …
	faults map[string]int // "throttle" …
}

// Outage is a stretch of the run during which DynamoDB throttles every
// request of the consumers: a table over its capacity, or DynamoDB Local
// slowed down by a loaded machine, for longer than the consumers' retries.
// Unlike the fault rates, it lasts: what the store backoff is for.
type Outage struct {
	After time.Duration // after Begin
	For   time.Duration // 0: none
}

// Begin starts the outage's clock: the run's first send.
func (d *Dynamo) Begin(start time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.outage = [2]time.Time{start.Add(d.Outage.After), start.Add(d.Outage.After + d.Outage.For)}
}

// Decider is the proxy's decision function.
func (d *Dynamo) Decider() faultproxy.Decider {
	d.once.Do(func() {
		d.rng = rand.New(rand.NewPCG(d.Seed, 0xd1a0))
		d.counts, d.faults = map[string]int{}, map[string]int{}
	})
	return d.decide
}

// producerKeys marks a request of the producer's guard: its storage keys
// (`"producer#…`).
var producerKeys = []byte(`"` + contract.ProducerNamespace + idem.KeySeparator)

func (d *Dynamo) decide(r faultproxy.Request) faultproxy.Action {
	who := "consumer"
	effect := d.LeaseMode && r.Op != "TransactWriteItems" && !bytes.Contains(r.Body, []byte(`"TableName":"`+d.ReceiptTable+`"`))
	switch {
	case bytes.Contains(r.Body, producerKeys):
		who = "producer"
	case effect:
		who = "consumer effect"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[who+" "+r.Op]++
	if now := time.Now(); who != "producer" && !now.Before(d.outage[0]) && now.Before(d.outage[1]) {
		d.faults["outage"]++
		return faultproxy.Action{Kind: faultproxy.Throttle}
	}
	x := d.rng.Float64()
	var kind faultproxy.Kind
	switch {
	case x < d.Rates.Throttle:
		kind = faultproxy.Throttle
	case x < d.Rates.Throttle+d.Rates.Fail:
		kind = faultproxy.Fail
	case x < d.Rates.Throttle+d.Rates.Fail+d.Rates.LoseAck:
		kind = faultproxy.LoseAck
		if who == "consumer effect" {
			kind = faultproxy.Fail
		}
	default:
		return faultproxy.Action{}
	}
	d.faults[kind.String()]++
	return faultproxy.Action{Kind: kind}
}

// Counts returns the requests by sender and operation.
func (d *Dynamo) Counts() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.counts)
}

// Faults returns the faults injected by kind.
func (d *Dynamo) Faults() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.faults)
}
