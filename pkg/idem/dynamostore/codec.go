package dynamostore

import (
	"fmt"
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
		rec.Status == idem.StatusFailed ||
		(rec.Status == idem.StatusInProgress && !rec.LeaseUntil.IsZero() && millis(rec.LeaseUntil) < millis(now))
}

// decode turns an item into a Record. Missing attributes decode as zero
// values; times that are absent stay the zero time.
func (s *Store) decode(item map[string]types.AttributeValue) (idem.Record, error) {
	n := s.names
	var (
		rec                         idem.Record
		status                      string
		leaseUntil, expires, update int64
	)
	fields := []struct {
		name string
		dst  any
	}{
		{s.storageKeyAttr(), &rec.Key},
		{n.Status, &status},
		{n.Lease, &rec.Lease},
		{n.LeaseUntil, &leaseUntil},
		{n.TTL, &expires},
		{n.Attempts, &rec.Attempts},
		{n.Fingerprint, &rec.Fingerprint},
		{n.Result, &rec.Result},
		{n.NoResult, &rec.ResultOmitted},
		{n.UpdatedAt, &update},
		{n.LastError, &rec.LastError},
	}
	for _, f := range fields {
		av, ok := item[f.name]
		if !ok {
			continue
		}
		if err := attributevalue.Unmarshal(av, f.dst); err != nil {
			return idem.Record{}, fmt.Errorf("dynamostore: decode attribute %q: %w", f.name, err)
		}
	}
	rec.Status = idem.Status(status)
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
