package dynamostore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Time units on the item. expiresAt is in seconds because DynamoDB TTL only
// understands Unix seconds; the others are in milliseconds so that leases of
// a few seconds keep their precision.
func seconds(t time.Time) int64 { return t.Unix() }
func millis(t time.Time) int64  { return t.UnixMilli() }

// key is the primary key of the record stored under k.
func (s *Store) key(k string) map[string]types.AttributeValue {
	if s.sortKey != "" {
		return map[string]types.AttributeValue{
			s.names.PartitionKey: &types.AttributeValueMemberS{Value: s.partitionValue},
			s.sortKey:            &types.AttributeValueMemberS{Value: k},
		}
	}
	return map[string]types.AttributeValue{s.names.PartitionKey: &types.AttributeValueMemberS{Value: k}}
}

// storageKeyAttr is the attribute holding the storage key: the sort key of
// a composite key, else the partition key.
func (s *Store) storageKeyAttr() string {
	if s.sortKey != "" {
		return s.sortKey
	}
	return s.names.PartitionKey
}

// isTakeable evaluates the takeable condition on a record we read, with the
// same (truncated) units the condition uses on the server, where a missing
// attribute compares false.
func isTakeable(rec idem.Record, now time.Time) bool {
	return (!rec.ExpiresAt.IsZero() && seconds(rec.ExpiresAt) < seconds(now)) ||
		rec.Status == idem.StatusFailed || rec.Status == idem.StatusUnknown ||
		(rec.Status == idem.StatusInProgress && !rec.LeaseUntil.IsZero() && millis(rec.LeaseUntil) < millis(now))
}

// Decode turns an item of the Store's table — one a Scan, a Query or a
// stream returns — into the Record Get would return for it, for tools that
// read the table themselves (cmd/idemctl). It reads the attribute names the
// Store was configured with.
func (s *Store) Decode(item map[string]types.AttributeValue) (idem.Record, error) {
	return s.decode(item)
}

// decode turns an item into a Record. Missing attributes decode as zero
// values; times that are absent stay the zero time.
//
// Each attribute of the type the store writes is read directly; anything
// else (a NULL, a type someone else wrote) goes through attributevalue, so
// the result, errors included, is what attributevalue.Unmarshal gives. The
// direct path matters: decode runs for every acquire and every duplicate,
// and reflection per attribute cost more than the rest of the Store.
func (s *Store) decode(item map[string]types.AttributeValue) (idem.Record, error) {
	n := s.names
	var (
		rec                         idem.Record
		status, prev                string
		leaseUntil, expires, update int64
		prevExpires                 int64
		resolved                    bool
	)
	errs := [...]error{
		attr(item, s.storageKeyAttr(), &rec.Key, asString),
		attr(item, n.Status, &status, asString),
		attr(item, n.Lease, &rec.Lease, asString),
		attr(item, n.LeaseUntil, &leaseUntil, asInt64),
		attr(item, n.TTL, &expires, asInt64),
		attr(item, n.Attempts, &rec.Attempts, asInt),
		attr(item, n.Fingerprint, &rec.Fingerprint, asString),
		attr(item, n.Result, &rec.Result, asBytes),
		attr(item, n.NoResult, &rec.ResultOmitted, asBool),
		attr(item, n.UpdatedAt, &update, asInt64),
		attr(item, n.LastError, &rec.LastError, asString),
		attr(item, n.PrevStatus, &prev, asString),
		attr(item, n.PrevExpiresAt, &prevExpires, asInt64),
		attr(item, n.Resolved, &resolved, asBool),
	}
	for _, err := range errs {
		if err != nil {
			return idem.Record{}, err
		}
	}
	rec.Status, rec.PrevStatus = idem.Status(status), idem.Status(prev)
	if prevExpires != 0 && prevExpires < update/1000 {
		// Taken past its expiry (the acquire's now is its updatedAt): it
		// counted as absent, as the condition says, and nothing was taken
		// over.
		rec.PrevStatus = ""
	}
	rec.Resolved = isResolved(resolved, rec)
	if leaseUntil != 0 {
		rec.LeaseUntil = time.UnixMilli(leaseUntil)
	}
	if expires != 0 {
		rec.ExpiresAt = time.Unix(expires, 0)
	}
	if update != 0 {
		rec.UpdatedAt = time.UnixMilli(update)
	}
	if len(rec.Result) == 0 {
		rec.Result = nil
	}
	return rec, nil
}

// attr decodes the attribute name of item into dst, if it is there: with
// direct when it can, else with attributevalue.Unmarshal.
func attr[T any](item map[string]types.AttributeValue, name string, dst *T, direct func(types.AttributeValue, *T) bool) error {
	av, ok := item[name]
	if !ok || direct(av, dst) {
		return nil
	}
	if err := attributevalue.Unmarshal(av, dst); err != nil {
		return fmt.Errorf("dynamostore: decode attribute %q: %w", name, err)
	}
	return nil
}

// The direct decoders: true when av is of the type the store writes and
// was decoded as attributevalue would decode it.

func asString(av types.AttributeValue, dst *string) bool {
	v, ok := av.(*types.AttributeValueMemberS)
	if ok {
		*dst = v.Value
	}
	return ok
}

func asInt64(av types.AttributeValue, dst *int64) bool {
	v, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return false
	}
	*dst = i
	return true
}

func asInt(av types.AttributeValue, dst *int) bool {
	v, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(v.Value, 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*dst = int(i)
	return true
}

func asBytes(av types.AttributeValue, dst *[]byte) bool {
	v, ok := av.(*types.AttributeValueMemberB)
	if ok {
		*dst = append([]byte(nil), v.Value...) // a copy, as attributevalue makes
	}
	return ok
}

func asBool(av types.AttributeValue, dst *bool) bool {
	v, ok := av.(*types.AttributeValueMemberBOOL)
	if ok {
		*dst = v.Value
	}
	return ok
}
