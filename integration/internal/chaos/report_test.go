package chaos

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestWriteReport(t *testing.T) {
	ok := &Result{Mode: consumer.ModeTransactional, Keys: 1000, Elapsed: 10 * time.Second, Deliveries: 2500, DynamoTotal: 5000,
		Dynamo: map[string]int{"consumer TransactWriteItems": 2500}, StoreBackoff: "12s",
		Account: Account{Applied: 1000, DLQ: []ReasonCount{{"poison key", 2}, {"store failed", 1}}, DLQByClass: map[string]int{DeadPoison: 2, DeadStore: 1}}}
	bad := &Result{Mode: consumer.ModeLease, Keys: 1000, Elapsed: 10 * time.Second, Deliveries: 2600,
		Account:  Account{Applied: 999, DoubleEffects: 1, Doubled: []Double{{Key: "l-000007", Applied: 2, Causes: []Cause{{ClassKillAfter, "SIGKILL at after-effect of this key"}}}}, Lost: []string{"l-000009"}},
		Problems: []string{"1 lost"}}
	var b bytes.Buffer
	WriteReport(&b, Header{Title: "Chaos run", Chart: "chart.svg"}, []*Result{bad, ok})
	r := b.String()
	for _, want := range []string{
		"| verdict | **BROKEN** (1 problems) | **invariant holds** |",
		"| throughput (deliveries / first send → drained) | 260 msgs/s | 250 msgs/s |",
		"| DynamoDB requests per delivery | 0.00 (consumers alone 0.00) | 2.00 (consumers alone 1.00) |",
		"## " + consumer.ModeLease + " mode", "## " + consumer.ModeTransactional + " mode", "- 1 lost",
		"| l-000007 | 2 | SIGKILL at after-effect of this key |",
		"[chart.svg](chart.svg)",
		"| store backoff | off | on, base 12s |",
		"| dead-letter queue | 0 (poison 0, malformed 0, store failure 0, other 0) | 3 (poison 2, malformed 0, store failure 1, other 0) |",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567", -5: "-5"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
