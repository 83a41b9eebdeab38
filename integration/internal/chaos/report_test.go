package chaos

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/partner"
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
		"| verdict | **BROKEN (1 problems)** | **invariant holds** |",
		"| throughput (deliveries / first send → drained) | 260 msgs/s | 250 msgs/s |",
		"| DynamoDB requests per delivery | 0.00 (consumers alone 0.00) | 2.00 (consumers alone 1.00) |",
		"## " + consumer.ModeLease + " mode", "## " + consumer.ModeTransactional + " mode", "- 1 lost",
		"| l-000007 | 2 | SIGKILL at after-effect of this key |",
		"[chart.svg](chart.svg)",
		"| store backoff | off | on, base 12s |",
		"| dead-letter queue | 0 (poison 0, malformed 0, held 0, store failure 0, other 0) | 3 (poison 2, malformed 0, held 0, store failure 1, other 0) |",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestReportPoliciesSideBySide: the three lease-mode policies and
// transactional mode, a column each, with the double effects by class, the
// held keys and their resolution, the partner's counts and the DLQ by
// reason; and the same table on the terminal.
func TestReportPoliciesSideBySide(t *testing.T) {
	partnerStats := partner.Stats{Calls: 1100, Applied: 1003, Keys: 1000, Lookups: 40, Refused: 10, LostReplies: 11, SlowReplies: 5, DownCalls: 30, DownLookups: 2}
	lease := func(policy string) *Result {
		return &Result{Mode: consumer.ModeLease, Policy: policy, Keys: 1000, Elapsed: time.Minute, Deliveries: 1500,
			Partner: partnerStats, PartnerSlowFor: 3 * time.Second, Lease: 2 * time.Second,
			PartnerDown: [2]time.Duration{20 * time.Second, 23 * time.Second},
			Account:     Account{LeaseMode: true, Policy: policy, Applied: 1000, DLQByClass: map[string]int{}}}
	}
	reconcile, hold, retry := lease(PolicyReconcile), lease(PolicyHold), lease(PolicyRetry)
	hold.Account.Held, hold.Account.HeldDead = []string{"l-000001", "l-000002", "l-poison-0000"}, 4
	hold.Account.DLQ = []ReasonCount{{"idem: held: an earlier attempt's outcome is unknown: consumer#… (attempt 2): unknown outcome, no reconcile", 4}}
	hold.Resolution = &Resolution{Held: 3, HeldPoison: 1, Done: 1, NotDone: 2, Redriven: 1, Rounds: 1, AppliedOnce: 2, Took: 2 * time.Second}
	retry.Account.DoubleEffects = 3
	retry.Account.Doubled = []Double{
		{Key: "l-000003", Applied: 3, Causes: []Cause{{ClassPartnerLost, "lost"}, {ClassKillBatch, "kill"}}},
		{Key: "l-000004", Applied: 2, Causes: []Cause{{ClassKillAfter, "kill"}}},
	}
	tx := &Result{Mode: consumer.ModeTransactional, Keys: 1000, Elapsed: time.Minute, Account: Account{Applied: 1000}}
	runs := []*Result{reconcile, hold, retry, tx}
	var b bytes.Buffer
	WriteReport(&b, Header{Title: "Chaos run"}, runs)
	r := b.String()
	for _, want := range []string{
		"| | lease/reconcile | lease/hold | lease/retry | transactional |",
		"| double effects by class (most direct cause) | none | none | lost reply 2<br>kill after the call 1 | none |",
		"| held keys | 0 | 3 (1 poison, 0 held by a direct copy only)<br>4 dead letters held | 0 | - |",
		"| resolved done / not-done | - | 1 / 2<br>1 sent again (1 rounds, 2s)<br>2 of 2 held keys applied once in the end | - | - |",
		"| partner calls / applied / lookups | 1,100 / 1,003 / 40 | 1,100 / 1,003 / 40 | 1,100 / 1,003 / 40 | - |",
		"| partner outage | 3s from +20s (the lease: 2s) |",
		"| DLQ by reason | none | 4 × idem: held: an earlier attempt's outcome is unknown (attempt 2): unknown outcome, no reconcile | none | none |",
		"## lease mode, hold policy", "### Held keys and their resolution",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	b.Reset()
	Summary(&b, runs)
	out := b.String()
	for _, want := range []string{"lease/reconcile", "lease/hold", "held keys", "lost reply 2", "kill after the call 1", "2 of 2 held keys applied once in the end"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal summary lacks %q:\n%s", want, out)
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
