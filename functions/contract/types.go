package contract

import "slices"

// Table is a DynamoDB table the effect writes. infra/stack.go creates each
// one (on-demand, point-in-time recovery, the stack's encryption), names it
// in the consumer's variable Env and grants the consumer Actions on it.
type Table struct {
	Env          string   // the variable that names the table
	PartitionKey string   // its string partition key
	Actions      []string // what the consumer may do to it
}

// Setting is a plain variable of the effect, set on the consumer from the
// CDK context (cdk synth -c <Context>=<value>) when given.
type Setting struct {
	Env     string
	Context string
	// Valid checks a value at synth time; nil: any.
	Valid func(string) bool
	// Modes are the modes it may be set in; nil: any.
	Modes []string
	// Required: in the modes it may be set in, the app refuses to
	// synthesize without a value, rather than deploy a consumer whose
	// Setup refuses its environment.
	Required bool
	// Example is a value the error asking for a required setting shows
	// (cdk deploy -c <Context>=<Example>).
	Example string
	// Suite is the value of the test and localstack profiles, in the modes
	// it may be set in: what the integration suite runs against (a stub of
	// the remote system on a fixed loopback address, say); "": those
	// profiles leave it unset.
	Suite string
}

// AllowedIn reports whether s may be set in mode (Modes nil: any).
func (s Setting) AllowedIn(mode string) bool {
	return s.Modes == nil || slices.Contains(s.Modes, mode)
}

// SuitePartner is where the proof's stand-in for a remote system (the
// partner: it records each call by its Idempotency-Key and answers whether
// a key's effect took place) listens while the deployed-stack test runs. A
// Setting's Suite value that begins with it points the test profiles'
// consumer at that stand-in; the suite's own runs (emulators, LocalStack,
// chaos, the demo) start one on a free port and point the value there.
const SuitePartner = "http://127.0.0.1:47931"
