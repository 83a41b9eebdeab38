package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// defaultSegments is how many parallel scans read the table by default: a
// few, so that a large table is read several times faster without taking
// all of an on-demand table's burst.
const defaultSegments = 4

// each calls fn for every record of the namespace, of status if it is not
// empty. A table without a sort key is read by segments parallel scans; a
// table with one by a query of its records' partition, which reads only
// that partition (the rest may be a whole single-table design). The
// namespace and status are filtered server-side, so only matching records
// travel; fn is called from one goroutine at a time. bar may be nil.
func (t *table) each(ctx context.Context, status idem.Status, segments int, bar *progress, fn func(idem.Record)) error {
	var mu sync.Mutex
	page := func(items []map[string]types.AttributeValue, scanned int32) error {
		mu.Lock()
		defer mu.Unlock()
		for _, item := range items {
			rec, err := t.Decode(item)
			if err != nil {
				return fmt.Errorf("table %q: %w", t.name, err)
			}
			fn(rec)
		}
		bar.add(int64(scanned), int64(len(items)))
		return nil
	}
	if t.sortKey != "" {
		bar.start(1)
		defer bar.finish()
		return t.queryAll(ctx, status, page)
	}
	bar.start(segments)
	defer bar.finish()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, segments)
	var wg sync.WaitGroup
	for seg := range segments {
		wg.Go(func() {
			if errs[seg] = t.scanSegment(ctx, seg, segments, status, page); errs[seg] != nil {
				cancel() // one failed segment fails the listing: stop the others
			}
			bar.segmentDone()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

func (t *table) scanSegment(ctx context.Context, seg, segments int, status idem.Status, page func([]map[string]types.AttributeValue, int32) error) error {
	x, err := t.scanExpr(status)
	if err != nil {
		return err
	}
	p := dynamodb.NewScanPaginator(t.db, &dynamodb.ScanInput{
		TableName:                 aws.String(t.name),
		Segment:                   aws.Int32(int32(seg)),
		TotalSegments:             aws.Int32(int32(segments)),
		FilterExpression:          x.Filter(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("scan table %q: %w", t.name, err)
		}
		if err := page(out.Items, out.ScannedCount); err != nil {
			return err
		}
	}
	return nil
}

func (t *table) queryAll(ctx context.Context, status idem.Status, page func([]map[string]types.AttributeValue, int32) error) error {
	x, err := t.queryExpr(t.prefix(), status)
	if err != nil {
		return err
	}
	p := dynamodb.NewQueryPaginator(t.db, &dynamodb.QueryInput{
		TableName:                 aws.String(t.name),
		KeyConditionExpression:    x.KeyCondition(),
		FilterExpression:          x.Filter(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query table %q: %w", t.name, err)
		}
		if err := page(out.Items, out.ScannedCount); err != nil {
			return err
		}
	}
	return nil
}

// name is an attribute in an expression, never read as a document path.
func name(n string) expression.NameBuilder { return expression.NameNoDotSplit(n) }

// scanExpr filters a scan to the namespace's records, of status if given.
func (t *table) scanExpr(status idem.Status) (expression.Expression, error) {
	cond := name(t.keyAttr()).BeginsWith(t.prefix())
	if status != "" {
		cond = cond.And(name(schema.Status).Equal(expression.Value(string(status))))
	}
	return expression.NewBuilder().WithFilter(cond).Build()
}

// queryExpr selects the records' partition and, with prefix, the sort
// keys that begin with it; status filters as in scanExpr.
func (t *table) queryExpr(prefix string, status idem.Status) (expression.Expression, error) {
	key := expression.Key(t.partitionKey).Equal(expression.Value(t.partitionValue))
	if prefix != "" {
		key = key.And(expression.Key(t.sortKey).BeginsWith(prefix))
	}
	b := expression.NewBuilder().WithKeyCondition(key)
	if status != "" {
		b = b.WithFilter(name(schema.Status).Equal(expression.Value(string(status))))
	}
	return b.Build()
}
