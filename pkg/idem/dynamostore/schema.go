package dynamostore

import (
	"fmt"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Names are the attribute names of the receipt record. The stack (infra/) and
// the tests use DefaultSchema so that the table CDK creates and the items this
// package writes can never drift apart.
type Names struct {
	// PartitionKey is the table's partition key attribute (type S). It holds
	// the storage key (namespace#sha256(key)), or with WithCompositeKey a
	// fixed value shared by every record.
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

// fields lists the names with what they are called in errors.
func (n Names) fields() []struct{ field, value string } {
	return []struct{ field, value string }{
		{"PartitionKey", n.PartitionKey}, {"TTL", n.TTL}, {"Status", n.Status},
		{"Lease", n.Lease}, {"LeaseUntil", n.LeaseUntil}, {"Attempts", n.Attempts},
		{"Fingerprint", n.Fingerprint}, {"Result", n.Result}, {"NoResult", n.NoResult},
		{"UpdatedAt", n.UpdatedAt}, {"LastError", n.LastError},
	}
}

// validate reports an empty or repeated name; sortKey, if set, must differ
// from every other name too.
func (n Names) validate(sortKey string) error {
	seen := make(map[string]string)
	fields := n.fields()
	if sortKey != "" {
		fields = append(fields, struct{ field, value string }{"sort key", sortKey})
	}
	for _, f := range fields {
		if f.value == "" {
			return fmt.Errorf("%w: dynamostore: schema: empty %s", idem.ErrInvalid, f.field)
		}
		if other, ok := seen[f.value]; ok {
			return fmt.Errorf("%w: dynamostore: schema: %s and %s are both %q", idem.ErrInvalid, other, f.field, f.value)
		}
		seen[f.value] = f.field
	}
	return nil
}

// namesLen is the summed length of the names, for the item size budget.
func (n Names) namesLen() int {
	total := 0
	for _, f := range n.fields() {
		total += len(f.value)
	}
	return total
}
