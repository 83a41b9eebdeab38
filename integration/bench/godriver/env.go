package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// Settings that must match the Powertools side (its common.py).
const (
	namespace = "bench"
	// functionTimeout is the stack's FunctionTimeout: every call starts with
	// this much time left, which becomes the lease, as Powertools turns the
	// remaining time into in_progress_expiration.
	functionTimeout = 30 * time.Second
	// partitionKey is the table's key attribute in the Powertools drivers'
	// contract; the Go driver uses the same tables.
	partitionKey = "id"
)

// env is what every scenario uses: one client, store and Guard, as a Lambda
// builds them at init.
type env struct {
	client   *dynamodb.Client
	counter  *counter
	recorder *recorder // the floor's capture
	store    *dynamostore.Store
	guard    *idem.Guard
	table    string
	effects  effects
}

func newEnv(ctx context.Context, a args) (*env, error) {
	dummyCredentials()
	e := &env{counter: &counter{byOp: map[string]int{}}, recorder: &recorder{}, table: a.table}
	// The pool holds W connections, as botocore's max_pool_connections and
	// Node's maxSockets on the other side.
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = a.workers
		t.MaxIdleConnsPerHost = a.workers
	})
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithHTTPClient(httpClient),
	)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	e.client = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(a.endpoint)
		// DynamoDB Local sends no X-Amz-Crc32 on errors, and the SDK would
		// log a checksum warning for every duplicate (see emu.Clients).
		o.DisableValidateResponseChecksum = true
		o.APIOptions = append(o.APIOptions, e.counter.register, e.recorder.register)
	})
	schema := dynamostore.DefaultSchema
	schema.PartitionKey = partitionKey
	if e.store, err = dynamostore.New(e.client, a.table, dynamostore.WithSchema(schema)); err != nil {
		return nil, err
	}
	var opts []idem.Option
	if a.scenario == driver.CacheDup {
		opts = append(opts, idem.WithCache(a.messages+a.workers))
	}
	if e.guard, err = idem.New(e.store, namespace, opts...); err != nil {
		return nil, err
	}
	if a.createTable && a.scenario != driver.Cold {
		if err := e.createTable(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// dummyCredentials makes sure nothing from the caller's environment (a
// profile, real keys, IMDS) reaches the SDK: DynamoDB Local only.
func dummyCredentials() {
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"} {
		os.Unsetenv(v)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
}

func (e *env) createTable(ctx context.Context) error {
	_, err := e.client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(e.table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(partitionKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(partitionKey), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", e.table, err)
	}
	w := dynamodb.NewTableExistsWaiter(e.client, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 200 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(e.table)}, 30*time.Second); err != nil {
		return fmt.Errorf("wait for table %s: %w", e.table, err)
	}
	return nil
}

// counter counts the HTTP requests the SDK sends, per operation. It sits in
// the Finalize step after the retry middleware: every attempt counts.
type counter struct {
	mu   sync.Mutex
	byOp map[string]int
}

func (c *counter) register(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("BenchCountRequests",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			c.mu.Lock()
			c.byOp[op]++
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byOp)
}

func delta(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range after {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// effects counts effect runs per key (the correctness check).
type effects struct {
	mu    sync.Mutex
	calls map[string]int
}

func (e *effects) hit(key string) {
	e.mu.Lock()
	if e.calls == nil {
		e.calls = map[string]int{}
	}
	e.calls[key]++
	e.mu.Unlock()
}

func (e *effects) reset() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.calls
	e.calls = map[string]int{}
	return old
}

// order is the message body of every scenario, as the Powertools drivers
// build it: {"orderId":"<key>","customer":"c-1","amountCents":1234}.
type order struct {
	OrderID     string `json:"orderId"`
	Customer    string `json:"customer"`
	AmountCents int    `json:"amountCents"`
}

func body(key string) string {
	b, _ := json.Marshal(order{OrderID: key, Customer: "c-1", AmountCents: 1234})
	return string(b)
}

type giftCard struct {
	GiftCard    string `json:"giftCard"`
	AmountCents int    `json:"amountCents"`
}

// effect is the trivial business effect: read the order, count the call,
// return the gift card (stored and replayed to duplicates).
func (e *effects) effect(msgBody string) ([]byte, error) {
	var o order
	if err := json.Unmarshal([]byte(msgBody), &o); err != nil {
		return nil, err
	}
	e.hit(o.OrderID)
	return json.Marshal(giftCard{GiftCard: "gc-" + o.OrderID, AmountCents: o.AmountCents})
}

func expectedResult(key string) []byte {
	b, _ := json.Marshal(giftCard{GiftCard: "gc-" + key, AmountCents: 1234})
	return b
}

func keys(prefix, infix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%s%07d", prefix, infix, i)
	}
	return out
}

func versions() map[string]*string {
	v := map[string]*string{"go": aws.String(runtime.Version())}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			switch m.Path {
			case "github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/aws-lambda-go":
				v[m.Path] = aws.String(m.Version)
			}
		}
	}
	return v
}

// coldResult is the cold scenario: newEnv built what the consumer's init
// builds (config, client, store, Guard); ready is now.
func coldResult(a args) driver.Result {
	return driver.Result{
		System: driver.SystemGo, Scenario: driver.Cold, Workers: a.workers,
		Seconds: time.Since(t0).Seconds(), CPUSeconds: driver.CPUSeconds(),
		RSSKB: driver.ProcStatusKB("VmRSS"), RSSPeakKB: driver.ProcStatusKB("VmHWM"),
		OK: true, Versions: versions(),
	}
}
