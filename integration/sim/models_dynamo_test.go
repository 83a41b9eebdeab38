//go:build integration

package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
	"github.com/exactlyonce/sqsidem/integration/sim/ddbmodel"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// The model check replays this many schedules of each backend (make test:
// these defaults; DynamoDB Local answers a schedule in about 25 ms).
var (
	dynamoSchedules = flag.Int("sim.models.dynamodb", 400, "DynamoDB schedules the model check replays against DynamoDB Local")
	redisSchedules  = flag.Int("sim.models.redis", 2000, "Redis schedules the model check replays against redis-server")
)

// TestModelAgreesWithDynamoDBLocal runs DynamoDB schedules of the
// simulator, recording what each sent to the model, and replays every
// schedule against DynamoDB Local through the fault proxy: each request
// meets the fault it met in the simulation (refused before it applies,
// throttled, applied with its reply lost), and every reply that reached
// its caller, then every table at the end, must be what the model said.
func TestModelAgreesWithDynamoDBLocal(t *testing.T) {
	root, err := emu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	server, err := emu.StartDynamoDB(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()
	proxy, err := faultproxy.Start(server.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	viaProxy, _, err := emu.Clients(ctx, proxy.URL(), "http://127.0.0.1:1") // no SQS: only its dummy credentials
	if err != nil {
		t.Fatal(err)
	}
	// One request, one fault: no SDK retries.
	viaProxy = dynamodb.New(viaProxy.Options(), func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	direct, _, err := emu.Clients(ctx, server.URL(), "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}

	recs := recordSchedules(t, "dynamodb", *dynamoSchedules)
	// The proxy decides by the request's table name, which names its
	// schedule, and its place in that schedule's recording.
	var plans sync.Map // table → *plan
	proxy.SetDecider(func(r faultproxy.Request) faultproxy.Action {
		for _, name := range tableNames(r.Body) {
			if p, ok := plans.Load(name); ok {
				return p.(*plan).next()
			}
		}
		return faultproxy.Action{}
	})
	var requests, mismatched atomic.Int64
	var mu sync.Mutex
	var failures []string
	work := make(chan *Recording)
	var wg sync.WaitGroup
	for i := range 4 { // DynamoDB Local answers several schedules at once
		wg.Go(func() {
			tables := &workerTables{suffix: fmt.Sprintf("-w%d", i)}
			if err := tables.create(ctx, direct); err != nil {
				t.Error(err)
				return
			}
			defer tables.delete(direct)
			for rec := range work {
				n, bad := replayDynamo(ctx, rec, viaProxy, direct, &plans, tables)
				requests.Add(int64(n))
				if len(bad) > 0 {
					mismatched.Add(1)
					mu.Lock()
					failures = append(failures, fmt.Sprintf("seed %d:\n\t%s", rec.Cfg.Seed, strings.Join(bad, "\n\t")))
					mu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	for _, r := range recs {
		work <- r
	}
	close(work)
	wg.Wait()
	t.Logf("DynamoDB Local: %d schedules, %d requests replayed through the fault proxy in %s; %d schedules disagree",
		len(recs), requests.Load(), time.Since(start).Round(time.Millisecond), mismatched.Load())
	if len(failures) > 0 {
		t.Fatalf("the model and DynamoDB Local disagree:\n%s", strings.Join(failures[:min(5, len(failures))], "\n"))
	}
}

// recordSchedules runs the first n schedules on backend, recorded. The
// schedules whose DynamoDB items are made small (Config.ItemLimit) are
// left out: the limit is the model's, DynamoDB's cannot be lowered.
func recordSchedules(t *testing.T, backend string, n int) []*Recording {
	var recs []*Recording
	for seed := uint64(1); len(recs) < n; seed++ {
		cfg := draw(seed)
		if cfg.Backend != backend || cfg.ItemLimit > 0 {
			continue
		}
		res, rec := RunRecorded(t, cfg)
		if len(res.Violations) > 0 {
			_, violations := res.Explain()
			t.Fatalf("seed %d: %s", seed, strings.Join(violations, "\n"))
		}
		recs = append(recs, rec)
	}
	return recs
}

// plan is the faults a schedule's requests meet at the proxy, in order.
type plan struct {
	mu     sync.Mutex
	faults []faultproxy.Kind
}

func (p *plan) next() faultproxy.Action {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.faults) == 0 {
		return faultproxy.Action{}
	}
	k := p.faults[0]
	p.faults = p.faults[1:]
	return faultproxy.Action{Kind: k}
}

// proxyKind is the proxy's way of meeting a request with the fault the
// simulation gave it.
func proxyKind(c WireCall) faultproxy.Kind {
	switch c.Fault {
	case faultRefuse:
		return faultproxy.Fail
	case faultThrottle:
		return faultproxy.Throttle
	case faultLost:
		return faultproxy.LoseAck
	}
	return faultproxy.Pass
}

// replayDynamo replays one recording on a worker's tables, emptied first,
// and returns the number of requests and what disagreed.
func replayDynamo(ctx context.Context, rec *Recording, viaProxy, direct *dynamodb.Client, plans *sync.Map, tables *workerTables) (int, []string) {
	suffix := tables.suffix
	if rec.Cfg.Seed%2 == 1 {
		suffix += compositeSuffix
	}
	if rec.Cfg.Seed%8 >= 6 {
		suffix += oddSuffix
	}
	var bad []string
	if err := tables.empty(ctx, direct); err != nil {
		return 0, []string{err.Error()}
	}
	p := &plan{}
	for _, c := range rec.Calls {
		p.faults = append(p.faults, proxyKind(c))
	}
	plans.Store(receiptsTable+suffix, p)
	plans.Store(ledgerTable+suffix, p)
	defer plans.Delete(receiptsTable + suffix)
	defer plans.Delete(ledgerTable + suffix)
	for i, c := range rec.Calls {
		got := ddbmodel.Send(ctx, viaProxy, c.DynamoDB.Op, renamed(c.DynamoDB.Input, suffix, fmt.Sprintf("s%d-%d", rec.Cfg.Seed, i)))
		switch {
		case c.Refused() || c.Lost():
			// The caller saw a 500 or a throttle: so must the SDK, from
			// the proxy, as the same error type the simulation gave.
			if !sameErrorType(got.Err, c.Fault) {
				bad = append(bad, fmt.Sprintf("call %d %s (%s): the SDK saw %v", i, c.DynamoDB.Op, c.Fault, got.Err))
			}
		case !ddbmodel.Equivalent(*c.DynamoDB, got):
			bad = append(bad, fmt.Sprintf("call %d %s: model %s, DynamoDB Local %s", i, c.DynamoDB.Op, show(*c.DynamoDB), show(got)))
		}
	}
	for table, items := range rec.Tables {
		real, err := scan(ctx, direct, table+suffix)
		if err != nil {
			return len(rec.Calls), append(bad, err.Error())
		}
		if want, got := rendered(items), rendered(real); !slices.Equal(want, got) {
			bad = append(bad, fmt.Sprintf("table %s at the end:\n\tmodel          %v\n\tDynamoDB Local %v", table, want, got))
		}
	}
	return len(rec.Calls), bad
}

// sameErrorType: a refused (500), throttled or lost request gives the
// SDK, through the proxy, the error type the simulation gave dynamostore
// (refused, lostReply).
func sameErrorType(real error, f fault) bool {
	if f == faultThrottle {
		var b *types.ThrottlingException
		return errors.As(real, &b)
	}
	var b *types.InternalServerError
	return errors.As(real, &b)
}

// rendered is a table's items in canonical text, sorted.
func rendered(items []map[string]types.AttributeValue) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = ddbmodel.Render(it)
	}
	slices.Sort(out)
	return out
}

func show(c ddbmodel.Call) string {
	if c.Err != nil {
		return "error " + c.Err.Error()
	}
	return fmt.Sprintf("%+v", c.Output)
}

// renamed is a copy of a request's input whose table names carry suffix,
// and whose transaction carries a token of its own (named token) unless it
// had one (the SDK would otherwise fill one in, and a retried request
// would be answered by it where the model, without one, evaluated it
// again).
func renamed(input any, suffix, token string) any {
	name := func(p *string) *string { return aws.String(aws.ToString(p) + suffix) }
	switch in := input.(type) {
	case *dynamodb.UpdateItemInput:
		cp := *in
		cp.TableName = name(in.TableName)
		return &cp
	case *dynamodb.GetItemInput:
		cp := *in
		cp.TableName = name(in.TableName)
		return &cp
	case *dynamodb.DeleteItemInput:
		cp := *in
		cp.TableName = name(in.TableName)
		return &cp
	case *dynamodb.TransactWriteItemsInput:
		cp := *in
		// DynamoDB keeps tokens for ten minutes, across the schedules a
		// worker's tables see: each schedule's tokens are its own.
		if cp.ClientRequestToken == nil {
			cp.ClientRequestToken = aws.String("replay-" + token)
		} else {
			cp.ClientRequestToken = aws.String(aws.ToString(cp.ClientRequestToken) + "-" + strings.SplitN(token, "-", 2)[0])
		}
		cp.TransactItems = make([]types.TransactWriteItem, len(in.TransactItems))
		for j, it := range in.TransactItems {
			switch {
			case it.Update != nil:
				u := *it.Update
				u.TableName = name(u.TableName)
				it.Update = &u
			case it.ConditionCheck != nil:
				cc := *it.ConditionCheck
				cc.TableName = name(cc.TableName)
				it.ConditionCheck = &cc
			case it.Put != nil:
				pp := *it.Put
				pp.TableName = name(pp.TableName)
				it.Put = &pp
			case it.Delete != nil:
				d := *it.Delete
				d.TableName = name(d.TableName)
				it.Delete = &d
			}
			cp.TransactItems[j] = it
		}
		return &cp
	}
	return input
}

// tableNames are the table names a request body mentions.
func tableNames(body []byte) []string {
	var names []string
	s := string(body)
	for {
		i := strings.Index(s, `"TableName":"`)
		if i < 0 {
			return names
		}
		s = s[i+len(`"TableName":"`):]
		j := strings.IndexByte(s, '"')
		if j < 0 {
			return names
		}
		names = append(names, s[:j])
		s = s[j:]
	}
}

// compositeSuffix names a worker's receipt table with a composite key
// (the schedules of odd seeds); its ledger is named the same way.
const compositeSuffix = "-c"

// workerTables are a replay worker's tables, created once and emptied
// before each schedule: a simple-key receipt table and its ledger, and a
// composite-key one and its ledger.
type workerTables struct{ suffix string }

func (w *workerTables) names() []string {
	var names []string
	for _, s := range []string{"", compositeSuffix, oddSuffix, compositeSuffix + oddSuffix} {
		names = append(names, receiptsTable+w.suffix+s, ledgerTable+w.suffix+s)
	}
	return names
}

// oddSuffix names a worker's tables for the schedules that use oddNames.
const oddSuffix = "-o"

func (w *workerTables) create(ctx context.Context, c *dynamodb.Client) error {
	key := func(pk, sk string) ([]types.AttributeDefinition, []types.KeySchemaElement) {
		defs := []types.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeS}}
		schema := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
		if sk != "" {
			defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS})
			schema = append(schema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
		}
		return defs, schema
	}
	n := w.names()
	for _, t := range []struct{ name, pk, sk string }{
		{n[0], dynamostore.DefaultSchema.PartitionKey, ""}, {n[1], "k", ""}, {n[2], compositePK, compositeSK}, {n[3], "k", ""},
		{n[4], oddNames.PartitionKey, ""}, {n[5], "k", ""}, {n[6], compositePK, compositeSK}, {n[7], "k", ""},
	} {
		defs, schema := key(t.pk, t.sk)
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String(t.name), AttributeDefinitions: defs, KeySchema: schema,
			BillingMode: types.BillingModePayPerRequest,
		}); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	return nil
}

// empty deletes every item of the worker's tables.
func (w *workerTables) empty(ctx context.Context, c *dynamodb.Client) error {
	for _, table := range w.names() {
		desc, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return err
		}
		items, err := scan(ctx, c, table)
		if err != nil {
			return err
		}
		for _, it := range items {
			key := map[string]types.AttributeValue{}
			for _, k := range desc.Table.KeySchema {
				key[aws.ToString(k.AttributeName)] = it[aws.ToString(k.AttributeName)]
			}
			if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *workerTables) delete(c *dynamodb.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, table := range w.names() {
		_, _ = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}
}

func scan(ctx context.Context, c *dynamodb.Client, table string) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		items = append(items, out.Items...)
	}
	return items, nil
}
