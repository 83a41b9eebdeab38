package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The run's size. LocalStack's event source mapping takes about a second
// per batch of 10: the run is kept small.
const (
	duplicateKeys  = 5 // each twice in one batch, then once in a later one
	senderKeys     = 5 // each copiesPerBatch times in every sender's batches
	copiesPerBatch = 2
	senders        = 3
)

// keys returns n keys of this run for scenario.
func (r *run) keys(scenario string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%s-%02d", r.id, scenario, i)
	}
	r.all = append(r.all, keys...)
	return keys
}

// label names a message of the run by its content: key and variant.
func (r *run) label(key string, variant int) string {
	return fmt.Sprintf("%s-v%d", key[len(r.id)+1:], variant)
}

// valid is App.Message for every key, labelled.
func (r *run) valid(keys []string, variant int) []labelled {
	msgs := make([]labelled, len(keys))
	for i, k := range keys {
		msgs[i] = labelled{label: r.label(k, variant), msg: r.app.Message(k, variant)}
	}
	return msgs
}

// send sends every message copies times in one batch, from senders
// released together.
func (r *run) send(ctx context.Context, t *testing.T, msgs []labelled, copies, senders int) {
	t.Helper()
	bs, err := batches(r.id, msgs, copies)
	if err != nil {
		t.Fatal(err)
	}
	if err := sendAtOnce(ctx, r.sqs, r.st.QueueURL, senders, bs); err != nil {
		t.Fatal(err)
	}
}

// A scenario sends its messages in two steps — first, and then once the
// effect of its keys applied took place — and checks once the queue has
// drained: its own check, if any, then each of its keys judged by the
// consumer's promise (judge.go). Scenarios do not run as parallel
// subtests: their sends are interleaved by Run, so that they overlap
// whatever -test.parallel is. A message that crashes the function is sent
// alone instead, after the queue has drained (faults_scenarios.go).
type scenario struct {
	name    string
	skip    string              // why it does not apply to this application; "" runs it
	plans   map[string]StubPlan // set on the stub before the first messages are sent (partner.go)
	first   []sending
	applied []string // keys whose effect takes place before then is sent
	then    []sending
	alone   []solo                            // sent one by one once the others have drained
	check   func(context.Context, *testing.T) // nil: only the keys are judged
	judged  []keyed
}

// sending is messages sent copies times in one batch, from senders at once.
type sending struct {
	msgs            []labelled
	copies, senders int
}

// applying are keys' valid messages, variant 0, judged as applied.
func applying(msgs []labelled, keys []string) []keyed {
	ks := make([]keyed, len(keys))
	for i, k := range keys {
		ks[i] = keyed{key: k, in: toApply, labels: []string{msgs[i].label}}
	}
	return ks
}

// scenarios builds the run's scenarios and adds up what they must come to.
func (r *run) scenarios() []scenario {
	scs := []scenario{r.duplicates(), r.senders(), r.mismatch(), r.keyless(), r.malformed(), r.poison()}
	scs = append(scs, r.partner()...)
	return append(scs, r.crash("crash before effect", consumer.FaultCrashBefore), r.crash("crash after effect", consumer.FaultCrashAfter))
}

// duplicates: each key twice in one SendMessageBatch, then once more in a
// later batch after its effect took place: applied once.
func (r *run) duplicates() scenario {
	keys := r.keys("dup", duplicateKeys)
	msgs := r.valid(keys, 0)
	r.want.sent(len(keys), 3*len(keys))
	return scenario{name: "duplicates", first: []sending{{msgs, 2, 1}}, applied: keys, then: []sending{{msgs, 1, 1}},
		judged: applying(msgs, keys)}
}

// senders: copies of each key from several senders released at the same
// moment, and side by side in each sender's batches: applied once.
func (r *run) senders() scenario {
	keys := r.keys("senders", senderKeys)
	msgs := r.valid(keys, 0)
	r.want.sent(len(keys), len(keys)*copiesPerBatch*senders)
	return scenario{name: "senders", first: []sending{{msgs, copiesPerBatch, senders}}, judged: applying(msgs, keys)}
}

// mismatch: the key's first payload is applied; the same key with another
// payload then ends in the dead-letter queue and the effect stays at one.
func (r *run) mismatch() scenario {
	keys := r.keys("mismatch", 1)
	first, other := r.valid(keys, 0), r.valid(keys, 1)
	if first[0].msg.Body == other[0].msg.Body {
		return scenario{name: "mismatch", skip: fmt.Sprintf("App.Message(%q, 1) returns the body of variant 0: another variant must be another payload", keys[0])}
	}
	r.want.sent(1, 1)
	r.want.deadLetter(other[0].label, consumer.MetricMismatch)
	return scenario{name: "mismatch", first: []sending{{first, 1, 1}}, applied: keys, then: []sending{{other, 1, 1}},
		check:  func(ctx context.Context, t *testing.T) { r.waitDead(ctx, t, other[0].label) },
		judged: applying(first, keys)}
}

// keyless: a body that is not JSON and a JSON object without the stack's
// key field, neither with the key attribute: rejected, to the dead-letter
// queue.
func (r *run) keyless() scenario {
	if r.st.Key == "" {
		return scenario{name: "keyless", skip: "the stack outputs no key: the consumer keys records its own way"}
	}
	obj, _ := json.Marshal(map[string]string{"not_" + r.st.Key: r.id}) // strings always marshal
	msgs := []labelled{
		{label: "keyless-text", msg: Message{Body: "not JSON " + r.id}},
		{label: "keyless-json", msg: Message{Body: string(obj)}},
	}
	for _, m := range msgs {
		r.want.deadLetter(m.label, consumer.MetricRejected)
	}
	return scenario{name: "keyless", first: []sending{{msgs, 1, 1}},
		check: func(ctx context.Context, t *testing.T) {
			for _, m := range msgs {
				r.waitDead(ctx, t, m.label)
			}
		}}
}

// malformed: App.Malformed, a key the effect refuses: to the dead-letter
// queue, never applied.
func (r *run) malformed() scenario {
	if r.app.Malformed == nil {
		return scenario{name: "malformed", skip: "App.Malformed is nil"}
	}
	keys := r.keys("malformed", 1)
	m := labelled{label: r.label(keys[0], 0), msg: r.app.Malformed(keys[0])}
	r.want.deadLetter(m.label, consumer.MetricFailed)
	return scenario{name: "malformed", first: []sending{{[]labelled{m}, 1, 1}},
		check:  func(ctx context.Context, t *testing.T) { r.waitDead(ctx, t, m.label) },
		judged: []keyed{{key: keys[0], in: toRefuse, labels: []string{m.label}}}}
}

// sendAll sets every scenario's stub plans and sends its first messages,
// waits for the keys they name applied, and sends their then messages.
func (r *run) sendAll(ctx context.Context, t *testing.T, scs []scenario) {
	var applied []string
	for _, sc := range scs {
		for _, k := range slices.Sorted(maps.Keys(sc.plans)) {
			if err := SetStubPlan(ctx, k, sc.plans[k]); err != nil {
				t.Fatalf("%s: %v", sc.name, err)
			}
		}
		for _, s := range sc.first {
			r.send(ctx, t, s.msgs, s.copies, s.senders)
		}
		applied = append(applied, sc.applied...)
	}
	r.waitApplied(ctx, t, applied)
	for _, sc := range scs {
		for _, s := range sc.then {
			r.send(ctx, t, s.msgs, s.copies, s.senders)
		}
	}
}

// deadLetterQueue: once the queue has drained, this run's messages in the
// dead-letter queue are the ones the scenarios sent there (checkDead).
func (r *run) deadLetterQueue(ctx context.Context, t *testing.T) {
	if err := r.dlq.poll(ctx); err != nil {
		t.Fatal(err)
	}
	got, others := r.dlq.snapshot()
	t.Logf("the dead-letter queue: %v of this run, %d other messages (earlier runs')", got, others)
	if err := r.want.checkDead(got); err != nil {
		t.Error(err)
	}
	if more := r.want.surplus(got); more != "" {
		t.Logf("in the dead-letter queue more often than sent (a send SQS stored twice, not the consumer's doing): %s", more)
	}
}
