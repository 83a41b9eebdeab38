package contract_test

import (
	"testing"

	"github.com/exactlyonce/sqsidem/functions/contract"
)

func TestIsHTTPURL(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"https://x.example", true},
		{"http://localhost:8080/issue", true},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/orders", true},
		{"", false},
		{"/issue", false},
		{"x.example", false},
		{"https:///issue", false},
		{"ftp://x.example", false},
		{"http://x.example/%zz", false},
	}
	for _, tt := range tests {
		if got := contract.IsHTTPURL(tt.v); got != tt.want {
			t.Errorf("IsHTTPURL(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestValidMode(t *testing.T) {
	for m, want := range map[string]bool{
		contract.ModeLease: true, contract.ModeTransactional: true,
		"": false, "Lease": false, "at-least-once": false,
	} {
		if got := contract.ValidMode(m); got != want {
			t.Errorf("ValidMode(%q) = %v, want %v", m, got, want)
		}
	}
}

// TestNamespacesDiffer: see the comment on the constants.
func TestNamespacesDiffer(t *testing.T) {
	if contract.ConsumerNamespace == "" || contract.ConsumerNamespace == contract.ProducerNamespace {
		t.Fatalf("namespaces consumer=%q producer=%q must be non-empty and differ", contract.ConsumerNamespace, contract.ProducerNamespace)
	}
}

func TestOutcomeMetricsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range contract.OutcomeMetrics() {
		if m == "" || seen[m] {
			t.Errorf("metric %q empty or listed twice", m)
		}
		seen[m] = true
	}
	if len(seen) != 10 {
		t.Errorf("want 10 outcome metrics, got %d", len(seen))
	}
}
