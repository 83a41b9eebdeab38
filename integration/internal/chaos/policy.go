package chaos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The unknown-outcome policies a lease-mode run compares: what happens
// when a call to the partner ends without saying whether it took place (a
// lost reply, a call past its deadline, a process killed after it, a
// zombie, a receipt that could not be written).
const (
	// PolicyReconcile is the template as it is: the attempt that takes
	// over an unknown outcome asks the partner (Reconcile) and runs the
	// effect only if it did not take place; when the partner cannot tell,
	// it runs it again (IDEM_UNKNOWN_OUTCOME=retry). Goal: no double
	// effect.
	PolicyReconcile = "reconcile"
	// PolicyHold parks every unknown outcome (IDEM_UNKNOWN_OUTCOME=hold,
	// the Reconcile dropped: FAULT_NO_RECONCILE=true, so that the policy
	// carries every one): the key is HELD, its copies end in the DLQ, and
	// the run settles each as an operator would (idemctl resolve, from the
	// partner's answer), then sends each not-done key once more. No double
	// effect, ever.
	PolicyHold = "hold"
	// PolicyRetry runs every unknown outcome again without asking
	// (IDEM_UNKNOWN_OUTCOME=retry, FAULT_NO_RECONCILE=true): the lease-mode
	// window, open. Double effects are expected, each explained by the
	// window that opened it.
	PolicyRetry = "retry"
)

// Policies lists the policies in the order a run compares them.
func Policies() []string { return []string{PolicyReconcile, PolicyHold, PolicyRetry} }

// ParsePolicies reads a comma-separated list of policies.
func ParsePolicies(s string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			continue
		case !slices.Contains(Policies(), p):
			return nil, fmt.Errorf("policy %q is not one of %v", p, Policies())
		case slices.Contains(out, p):
			return nil, fmt.Errorf("policy %q given twice", p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no policy in %q", s)
	}
	return out, nil
}

// PolicyEnv is the consumer's environment for policy.
func PolicyEnv(policy string) map[string]string {
	switch policy {
	case PolicyHold:
		return map[string]string{consumer.EnvUnknownOutcome: consumer.UnknownHold, consumer.EnvFaultNoReconcile: "true"}
	case PolicyRetry:
		return map[string]string{consumer.EnvUnknownOutcome: consumer.UnknownRetry, consumer.EnvFaultNoReconcile: "true"}
	}
	return map[string]string{consumer.EnvUnknownOutcome: consumer.UnknownRetry, consumer.EnvFaultNoReconcile: "false"}
}

// PolicyShort says what policy runs, in a few words.
func PolicyShort(policy string) string {
	switch policy {
	case PolicyReconcile:
		return "reconcile, then retry"
	case PolicyHold:
		return "hold, no reconcile"
	case PolicyRetry:
		return "retry, no reconcile"
	}
	return "-"
}

// PolicyText says what policy runs, for the report.
func PolicyText(policy string) string {
	switch policy {
	case PolicyReconcile:
		return "reconcile (IDEM_UNKNOWN_OUTCOME=retry, Reconcile asks the partner)"
	case PolicyHold:
		return "hold (IDEM_UNKNOWN_OUTCOME=hold, no Reconcile; held keys resolved with idemctl, not-done ones sent again)"
	case PolicyRetry:
		return "retry (IDEM_UNKNOWN_OUTCOME=retry, no Reconcile: the window open)"
	}
	return "- (transactional: no unknown outcome)"
}
