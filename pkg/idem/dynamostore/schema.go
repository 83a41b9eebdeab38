package dynamostore

// Names are the attribute names of the receipt record. The stack (infra/) and
// the tests use DefaultSchema so that the table CDK creates and the items this
// package writes can never drift apart.
type Names struct {
	// PartitionKey is the table's only key attribute (type S): namespace#sha256(key).
	PartitionKey string
	// TTL is the attribute DynamoDB Time to Live is enabled on (type N, Unix seconds).
	TTL         string
	Status      string
	Lease       string
	LeaseUntil  string
	Attempts    string
	Fingerprint string
	Result      string
	NoResult    string
	UpdatedAt   string
	LastError   string
}

// DefaultSchema is the record layout described in the package documentation.
var DefaultSchema = Names{
	PartitionKey: "pk",
	TTL:          "expiresAt",
	Status:       "status",
	Lease:        "lease",
	LeaseUntil:   "leaseUntil",
	Attempts:     "attempts",
	Fingerprint:  "fingerprint",
	Result:       "result",
	NoResult:     "resultOmitted",
	UpdatedAt:    "updatedAt",
	LastError:    "lastError",
}
