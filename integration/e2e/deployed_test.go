//go:build e2e

// Package e2e drives the stack as `cdklocal deploy` created it in LocalStack:
// the deployed producer and consumer, LocalStack's own SQS event source
// mapping, the deployed tables and queues. `make e2e-localstack` deploys,
// runs TestDeployedStack, TestIdemctlDeployed and TestKit, destroys, then
// runs TestNothingLeft.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/assembly"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/integration/kit"
)

// The keys of the run: sent by the producer twice, some of them also as
// raw copies by "another upstream", and two messages that can never
// succeed.
const (
	keys      = 40
	rawCopies = 10
)

// TestDeployedStack: every key applied once (the effect's probe says, on
// the deployed tables), duplicates suppressed, the bad messages in the
// deployed DLQ after maxReceiveCount receives with their reasons in the
// consumer's logs.
func TestDeployedStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	d := deployed(ctx, t)
	t.Logf("stack %s: %d resources; outputs %v", d.stackName, len(d.resources), d.outputs)
	d.compareWithTemplate(ctx, t)

	prefix := "e2e-" + strconv.FormatInt(time.Now().Unix(), 36)
	batch := d.messages(ctx, t, system.Keys(prefix, keys)...)
	start := time.Now()
	sent, runs := d.produceAll(ctx, t, batch)
	second := d.produce(ctx, t, batch)
	// A run that timed out reports nothing, although it may have sent: the
	// re-triggered run says whether every key is known as sent.
	t.Logf("producer: %d messages reported sent in %d run(s); re-triggered run %+v", sent, runs, second)
	if second.Duplicates != keys || second.Sent != 0 {
		t.Fatalf("producer: the re-triggered run sent %d with %d duplicates; want 0 and %d", second.Sent, second.Duplicates, keys)
	}
	if err := d.sendRaw(ctx, batch[:rawCopies]...); err != nil {
		t.Fatal(err)
	}
	// Two messages that can never succeed, whatever the deployment (it has
	// no fault switches): a body no key can be read from, and a body that
	// names another key than its key attribute (consumer.ErrKeyConflict).
	malformed := d.sendBody(ctx, t, system.Malformed, "")
	other := d.messages(ctx, t, prefix+"-body")[0]
	poison := d.sendBody(ctx, t, string(other.Body), prefix+"-poison")

	d.waitDrained(ctx, t, 2)
	elapsed := time.Since(start)

	applied, err := d.probe.Applied(ctx, system.KeysOf(batch))
	if err != nil {
		t.Fatal(err)
	}
	double, missing := 0, 0
	for _, m := range batch {
		switch n := applied[m.Key]; {
		case n == 0:
			missing++
		case n > 1:
			double += n - 1
		}
	}
	lines := d.consumerLog(ctx, t)
	outcomes := map[string]int{}
	for _, l := range lines {
		outcomes[l.Outcome]++
	}
	dead := d.deadLetters(ctx, t, lines)
	t.Logf("deployed stack, %s from the first send to drained: keys %d, applied %d, double effects %d, lost %d; deliveries %v; DLQ %d",
		elapsed.Round(time.Second), keys, keys-missing, double, missing, outcomes, len(dead))
	for _, dl := range dead {
		t.Logf("DLQ: message %s (key attribute %q) after %d receives: %s", dl.MessageID, dl.Key, dl.Receives, dl.Reason)
	}
	if double != 0 || missing != 0 {
		t.Fatalf("double effects %d, keys never applied %d; want 0 and 0", double, missing)
	}
	if outcomes["executed"] != keys || outcomes["duplicate"] < rawCopies {
		t.Fatalf("consumer outcomes %v: want %d executed and the %d raw copies suppressed as duplicates", outcomes, keys, rawCopies)
	}
	if len(dead) != 2 {
		t.Fatalf("DLQ holds %d messages, want the malformed and the poison one", len(dead))
	}
	for _, dl := range dead {
		if dl.MessageID != malformed && dl.MessageID != poison {
			t.Errorf("unexpected dead letter %+v", dl)
		}
		if dl.Receives < d.maxReceiveCount || dl.Reason == "" {
			t.Errorf("dead letter %s: %d receives (want >= %d), reason %q", dl.MessageID, dl.Receives, d.maxReceiveCount, dl.Reason)
		}
	}
}

// TestNothingLeft runs after `cdklocal destroy`: the stack and every
// queue, table, function, event source mapping and log group TestKit's
// kit.Run recorded are gone (kit.NothingLeft, as a team checks its own).
func TestNothingLeft(t *testing.T) {
	kit.NothingLeft(t, theStack(t).Name, nil)
}

// waitDrained waits until the queue is empty and the DLQ holds want
// messages.
func (d *deployment) waitDrained(ctx context.Context, t *testing.T, want int) {
	t.Helper()
	for quiet := 0; quiet < 2; {
		visible, inFlight := d.depth(ctx, t, d.queueURL)
		dlq, dlqInFlight := d.depth(ctx, t, d.dlqURL)
		if visible+inFlight == 0 && dlq+dlqInFlight >= want {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not drained: queue %d visible %d in flight, DLQ %d: %v", visible, inFlight, dlq, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func (d *deployment) depth(ctx context.Context, t *testing.T, url string) (visible, inFlight int) {
	t.Helper()
	visible, inFlight, err := system.QueueDepth(ctx, d.sqs, url)
	if err != nil {
		t.Fatal(err)
	}
	return visible, inFlight
}

// theStack is the stack of the assembly cdklocal deployed: the one in
// $SQSIDEM_ASSEMBLY, default the localstack profile's (`make
// synth-localstack`).
func theStack(t *testing.T) assembly.Stack {
	t.Helper()
	dir := os.Getenv("SQSIDEM_ASSEMBLY")
	if dir == "" {
		dir = filepath.Join("..", "..", "cdk.localstack.out")
	}
	s, err := assembly.Only(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
