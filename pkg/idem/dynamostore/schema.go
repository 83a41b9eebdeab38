package dynamostore

import (
	"cmp"
	"fmt"
	"strings"

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
	// Released is the lease of the last attempt whose release landed. It
	// outlives the acquires that take the record after it, so that a
	// release sent again after another attempt took the FAILED record it
	// left is recognised as the caller's own. Empty in a Names given to
	// WithSchema, it is DefaultSchema's, so that schemas written before it
	// existed keep working.
	Released string
	// PrevStatus is, on a record an acquire took, the status of the record
	// it took over ("" for none): the Guard learns from it whether it took
	// over an unknown outcome. Empty in a Names given to WithSchema, it is
	// DefaultSchema's.
	PrevStatus string
	// PrevLease is, on a record an acquire took, the lease of the record
	// it took over: with Released, how a release sent again after the
	// next attempt took its record (and released it too) knows its own.
	// Empty in a Names given to WithSchema, it is DefaultSchema's.
	PrevLease string
	// PrevExpiresAt is, on a record an acquire took, the expiry (TTL, Unix
	// seconds) of the record it took over (0 for none): one taken past it
	// counted as absent, and its status is not reported as taken over.
	// Empty in a Names given to WithSchema, it is DefaultSchema's.
	PrevExpiresAt string
	// Resolved marks a receipt an operator wrote (Store.Resolve, idemctl
	// resolve --done) after checking downstream, not the effect; it keeps
	// no result. Empty in a Names given to WithSchema, it is
	// DefaultSchema's.
	Resolved string
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
	Released:     "released",
	PrevStatus:   "prevStatus",
	PrevLease:    "prevLease",
	// An acquire's: the expiry of the record it took over.
	PrevExpiresAt: "prevExpiresAt",
	// An operator's receipt (Resolve).
	Resolved: "resolved",
}

// fields lists the names with what they are called in errors.
func (n Names) fields() []struct{ field, value string } {
	return []struct{ field, value string }{
		{"PartitionKey", n.PartitionKey}, {"TTL", n.TTL}, {"Status", n.Status},
		{"Lease", n.Lease}, {"LeaseUntil", n.LeaseUntil}, {"Attempts", n.Attempts},
		{"Fingerprint", n.Fingerprint}, {"Result", n.Result}, {"NoResult", n.NoResult},
		{"UpdatedAt", n.UpdatedAt}, {"LastError", n.LastError}, {"Released", n.Released}, {"PrevStatus", n.PrevStatus}, {"PrevLease", n.PrevLease}, {"PrevExpiresAt", n.PrevExpiresAt},
		{"Resolved", n.Resolved},
	}
}

// withDefaults fills in the names a schema may leave empty because they
// were added after it was written.
func (n Names) withDefaults() Names {
	n.Released = cmp.Or(n.Released, DefaultSchema.Released)
	n.PrevStatus = cmp.Or(n.PrevStatus, DefaultSchema.PrevStatus)
	n.PrevLease = cmp.Or(n.PrevLease, DefaultSchema.PrevLease)
	n.PrevExpiresAt = cmp.Or(n.PrevExpiresAt, DefaultSchema.PrevExpiresAt)
	n.Resolved = cmp.Or(n.Resolved, DefaultSchema.Resolved)
	return n
}

// DynamoDB's limits on attribute names: a key attribute's name is at most
// 255 bytes, any other's at most 64 KB. A longer one fails every request.
const (
	maxKeyNameBytes  = 255
	maxNameBytes     = 64 << 10
	minTableNameLen  = 3
	maxTableNameLen  = 255
	tableARNPrefix   = "arn:"
	tableNameSymbols = "_-."
)

// validate reports an empty, too long or repeated name; sortKey, if set,
// must differ from every other name too.
func (n Names) validate(sortKey string) error {
	seen := make(map[string]string)
	fields := n.fields()
	if sortKey != "" {
		fields = append(fields, struct{ field, value string }{"sort key", sortKey})
	}
	for _, f := range fields {
		limit := maxNameBytes
		if f.field == "PartitionKey" || f.field == "sort key" {
			limit = maxKeyNameBytes
		}
		if f.value == "" {
			return fmt.Errorf("%w: dynamostore: schema: empty %s", idem.ErrInvalid, f.field)
		}
		if len(f.value) > limit {
			return fmt.Errorf("%w: dynamostore: schema: %s is %d bytes, more than DynamoDB's %d", idem.ErrInvalid, f.field, len(f.value), limit)
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

// validTable reports a table name DynamoDB would refuse on every request:
// 3 to 255 letters, digits, '_', '-' and '.', or a table ARN.
func validTable(table string) error {
	if strings.HasPrefix(table, tableARNPrefix) {
		return nil
	}
	if len(table) < minTableNameLen || len(table) > maxTableNameLen {
		return fmt.Errorf("%w: dynamostore: table name %q is not 3 to 255 characters", idem.ErrInvalid, table)
	}
	for _, r := range table {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(tableNameSymbols, r)) {
			return fmt.Errorf("%w: dynamostore: table name %q has %q: only letters, digits, '_', '-' and '.'", idem.ErrInvalid, table, r)
		}
	}
	return nil
}
