package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

const (
	testTable = "receipts"
	testNS    = "orders"
	testStack = "shop"
)

// harness runs idemctl in process against fakes of every AWS service, on
// a clock the test moves.
type harness struct {
	t                *testing.T
	now              time.Time
	ddb              *fakeDynamo
	sqs              *fakeSQS
	cfn              *fakeCFN
	cw               *fakeCW
	queueURL, dlqURL string
	stdin            string
	stdinReader      io.Reader // instead of stdin
	inTTY, errTTY    bool
	connectErr       error
	// env is the environment idemctl reads (IDEM_REDIS_URL).
	env         map[string]string
	out, errOut bytes.Buffer
	// guard is a library Guard of the namespace: the storage keys the
	// CLI computes must be its.
	guard *idem.Guard
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, now: time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)}
	h.ddb = newFakeDynamo(testTable, "pk")
	h.sqs = newFakeSQS(func() time.Time { return h.now })
	h.dlqURL = h.sqs.addQueue("orders-dlq", "", 0)
	h.queueURL = h.sqs.addQueue("orders", "orders-dlq", 5)
	h.cfn = &fakeCFN{stacks: map[string]map[string]string{testStack: {
		"ReceiptTableName": testTable, "QueueUrl": h.queueURL, "DeadLetterQueueUrl": h.dlqURL,
		"Namespace": testNS, "Key": "orderId", "ConsumerFunctionName": "orders-consumer",
	}}}
	h.cw = &fakeCW{err: errFake}
	var err error
	if h.guard, err = idem.New(idemtest.NewMemoryStore(), testNS); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs idemctl with args and returns its exit code; stdout and
// stderr are in h.out and h.errOut.
func (h *harness) run(args ...string) int {
	h.t.Helper()
	h.out.Reset()
	h.errOut.Reset()
	in := h.stdinReader
	if in == nil {
		in = strings.NewReader(h.stdin)
	}
	return h.app(in, &h.out, &h.errOut).run(h.t.Context(), args)
}

// app is one run of idemctl on the harness's fakes and clock.
func (h *harness) app(in io.Reader, out, errOut io.Writer) *app {
	return &app{
		in: in, out: out, errOut: errOut, inTTY: h.inTTY, errTTY: h.errTTY,
		now:    func() time.Time { return h.now },
		getenv: func(k string) string { return h.env[k] },
		connect: func(context.Context, globals) (*clients, error) {
			if h.connectErr != nil {
				return nil, h.connectErr
			}
			return &clients{ddb: h.ddb, sqs: h.sqs, cfn: h.cfn, cw: h.cw}, nil
		},
	}
}

// ok runs args with --stack and --output json, which must succeed, and
// decodes the output into v.
func (h *harness) ok(v any, args ...string) {
	h.t.Helper()
	if code := h.run(append(args, "--stack", testStack, "--output", "json")...); code != 0 {
		h.t.Fatalf("idemctl %v: exit %d: %s", args, code, h.errOut.String())
	}
	if v != nil {
		if err := json.Unmarshal(h.out.Bytes(), v); err != nil {
			h.t.Fatalf("idemctl %v: %v\n%s", args, err, h.out.String())
		}
	}
}

// fails runs args with --stack; it must exit with code and one line on
// stderr that says want.
func (h *harness) fails(code int, want string, args ...string) {
	h.t.Helper()
	got := h.run(append(args, "--stack", testStack)...)
	line := h.errOut.String()
	if got != code || strings.Count(line, "\n") != 1 || !strings.Contains(line, want) {
		h.t.Errorf("idemctl %v: exit %d, stderr %q; want exit %d, one line saying %q", args, got, line, code, want)
	}
}

// put stores rec under key's storage key, as dynamostore lays it out.
func (h *harness) put(key string, rec idem.Record) {
	rec.Key = h.guard.StorageKey(key)
	h.ddb.put(encode(rec))
}

func (h *harness) record(key string) map[string]types.AttributeValue {
	return h.ddb.get(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: h.guard.StorageKey(key)}})
}

// encode is a record as dynamostore.DefaultSchema lays it out.
func encode(rec idem.Record) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	item := map[string]types.AttributeValue{
		schema.PartitionKey: s(rec.Key), schema.Status: s(string(rec.Status)), schema.Lease: s(rec.Lease),
		schema.Attempts: n(int64(rec.Attempts)),
	}
	if !rec.LeaseUntil.IsZero() {
		item[schema.LeaseUntil] = n(rec.LeaseUntil.UnixMilli())
	}
	if !rec.ExpiresAt.IsZero() {
		item[schema.TTL] = n(rec.ExpiresAt.Unix())
	}
	if !rec.UpdatedAt.IsZero() {
		item[schema.UpdatedAt] = n(rec.UpdatedAt.UnixMilli())
	}
	if rec.Fingerprint != "" {
		item[schema.Fingerprint] = s(rec.Fingerprint)
	}
	if rec.LastError != "" {
		item[schema.LastError] = s(rec.LastError)
	}
	if rec.PrevStatus != "" {
		item[schema.PrevStatus] = s(string(rec.PrevStatus))
	}
	if len(rec.Result) > 0 {
		item[schema.Result] = &types.AttributeValueMemberB{Value: rec.Result}
	}
	if rec.ResultOmitted {
		item[schema.NoResult] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return item
}

func body(key string, variant int) string {
	return `{"orderId":"` + key + `","amount":` + strconv.Itoa(10+variant) + `}`
}

// Records in each state, relative to h.now, for the payload body(key, 0).

func (h *harness) completed(key string) idem.Record {
	return idem.Record{Status: idem.StatusCompleted, Lease: "lease-" + key, Attempts: 1,
		LeaseUntil: h.now.Add(-time.Minute), ExpiresAt: h.now.Add(7 * 24 * time.Hour), UpdatedAt: h.now.Add(-time.Minute),
		Fingerprint: idem.Fingerprint([]byte(body(key, 0)))}
}

func (h *harness) failed(key string, attempts int) idem.Record {
	r := h.completed(key)
	r.Status, r.Attempts, r.LastError = idem.StatusFailed, attempts, "*net.OpError"
	return r
}

// unknown is a record released after an error that did not say whether
// the effect took place.
func (h *harness) unknown(key string, attempts int) idem.Record {
	r := h.failed(key, attempts)
	r.Status, r.LastError = idem.StatusUnknown, "provider-timeout"
	return r
}

// held is an unknown outcome the consumer's policy parked: no expiry.
func (h *harness) held(key string, attempts int) idem.Record {
	r := h.unknown(key, attempts)
	r.Status, r.PrevStatus, r.ExpiresAt = idem.StatusHeld, idem.StatusUnknown, time.Time{}
	r.LastError = "unknown outcome, reconcile could not tell: provider-timeout"
	return r
}

func (h *harness) inProgress(key string, leaseLeft time.Duration) idem.Record {
	r := h.completed(key)
	r.Status, r.LeaseUntil, r.UpdatedAt = idem.StatusInProgress, h.now.Add(leaseLeft), h.now.Add(-10*time.Minute)
	return r
}

func (h *harness) expired(key string, status idem.Status) idem.Record {
	r := h.completed(key)
	r.Status, r.ExpiresAt = status, h.now.Add(-time.Hour)
	return r
}

// fakeCFN answers DescribeStacks from stacks (name → outputs).
type fakeCFN struct {
	stacks map[string]map[string]string
	calls  int
}

func (f *fakeCFN) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	f.calls++
	outputs, ok := f.stacks[aws.ToString(in.StackName)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id " + aws.ToString(in.StackName) + " does not exist"}
	}
	st := cfntypes.Stack{StackName: in.StackName}
	for k, v := range outputs {
		st.Outputs = append(st.Outputs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{st}}, nil
}

// fakeCW answers GetMetricData with ages (queue name → seconds), or err.
type fakeCW struct {
	ages map[string]float64
	err  error
}

func (f *fakeCW) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		res := cwtypes.MetricDataResult{Id: q.Id}
		if age, ok := f.ages[aws.ToString(q.MetricStat.Metric.Dimensions[0].Value)]; ok {
			res.Values, res.Timestamps = []float64{age}, []time.Time{aws.ToTime(in.EndTime).Add(-time.Minute)}
		}
		out.MetricDataResults = append(out.MetricDataResults, res)
	}
	return out, nil
}
