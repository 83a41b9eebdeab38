package main

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// decode turns a scanned item into a Record as dynamostore.Store.Get does
// (decode_test.go holds the two side by side): the Store decodes only what
// it reads itself, and a scan returns items. Missing attributes stay zero.
func (rc *receipts) decode(item map[string]types.AttributeValue) (idem.Record, error) {
	var (
		rec                         idem.Record
		status                      string
		leaseUntil, expires, update int64
	)
	for _, a := range []struct {
		name string
		dst  any
	}{
		{rc.keyAttr(), &rec.Key}, {schema.Status, &status}, {schema.Lease, &rec.Lease},
		{schema.LeaseUntil, &leaseUntil}, {schema.TTL, &expires}, {schema.Attempts, &rec.Attempts},
		{schema.Fingerprint, &rec.Fingerprint}, {schema.Result, &rec.Result},
		{schema.NoResult, &rec.ResultOmitted}, {schema.UpdatedAt, &update}, {schema.LastError, &rec.LastError},
	} {
		if av, ok := item[a.name]; ok {
			if err := attributevalue.Unmarshal(av, a.dst); err != nil {
				return idem.Record{}, fmt.Errorf("decode attribute %q: %w", a.name, err)
			}
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
