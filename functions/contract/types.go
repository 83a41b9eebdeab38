package contract

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
}
