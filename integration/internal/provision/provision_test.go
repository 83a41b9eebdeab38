package provision

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type fakeSQS struct {
	created []*sqs.CreateQueueInput
	deleted []string
	failOn  string // queue name prefix to fail CreateQueue on
}

func (f *fakeSQS) CreateQueue(_ context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	if f.failOn != "" && strings.HasPrefix(*in.QueueName, f.failOn) {
		return nil, errors.New("boom")
	}
	f.created = append(f.created, in)
	return &sqs.CreateQueueOutput{QueueUrl: aws.String("http://127.0.0.1:9324/000000000000/" + *in.QueueName)}, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	name := (*in.QueueUrl)[strings.LastIndex(*in.QueueUrl, "/")+1:]
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:aws:sqs:elasticmq:123456789012:" + name}}, nil
}

func (f *fakeSQS) DeleteQueue(_ context.Context, in *sqs.DeleteQueueInput, _ ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error) {
	f.deleted = append(f.deleted, *in.QueueUrl)
	return &sqs.DeleteQueueOutput{}, nil
}

type fakeDDB struct {
	created   []*dynamodb.CreateTableInput
	ttl       []*dynamodb.UpdateTimeToLiveInput
	describes int
	deleted   []string
}

func (f *fakeDDB) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.created = append(f.created, in)
	return &dynamodb.CreateTableOutput{TableDescription: &ddbtypes.TableDescription{TableStatus: ddbtypes.TableStatusCreating}}, nil
}

func (f *fakeDDB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.describes++
	status := ddbtypes.TableStatusCreating
	if f.describes > 1 { // ACTIVE on the second look, to exercise the wait
		status = ddbtypes.TableStatusActive
	}
	return &dynamodb.DescribeTableOutput{Table: &ddbtypes.TableDescription{
		TableStatus: status, TableArn: aws.String("arn:aws:dynamodb:ddblocal:000000000000:table/" + *in.TableName),
	}}, nil
}

func (f *fakeDDB) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.ttl = append(f.ttl, in)
	return &dynamodb.UpdateTimeToLiveOutput{}, nil
}

func (f *fakeDDB) DeleteTable(_ context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	f.deleted = append(f.deleted, *in.TableName)
	return &dynamodb.DeleteTableOutput{}, nil
}

func provisionTestdata(t *testing.T) (*Stack, *fakeSQS, *fakeDDB) {
	t.Helper()
	tpl, err := LoadTemplate("testdata/stack.template.json")
	if err != nil {
		t.Fatal(err)
	}
	q, d := &fakeSQS{}, &fakeDDB{}
	s, err := Provision(context.Background(), tpl, q, d, "run1", WithRegion("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	return s, q, d
}

func TestQueues(t *testing.T) {
	s, q, _ := provisionTestdata(t)
	if len(s.Queues) != 3 || len(q.created) != 3 {
		t.Fatalf("queues %v, created %d", s.Queues, len(q.created))
	}
	// The DLQ must exist before the queue whose RedrivePolicy names it.
	dlqAt := slices.IndexFunc(q.created, func(in *sqs.CreateQueueInput) bool { return *in.QueueName == "OrdersQueueDLQ5C6F7E8A-run1" })
	srcAt := slices.IndexFunc(q.created, func(in *sqs.CreateQueueInput) bool { return *in.QueueName == "OrdersQueue1A2B3C4D-run1" })
	if dlqAt < 0 || srcAt < 0 || dlqAt > srcAt {
		t.Fatalf("creation order dlq=%d src=%d", dlqAt, srcAt)
	}
	src := q.created[srcAt]
	var rp map[string]any
	if err := json.Unmarshal([]byte(src.Attributes["RedrivePolicy"]), &rp); err != nil {
		t.Fatal(err)
	}
	if rp["deadLetterTargetArn"] != "arn:aws:sqs:elasticmq:123456789012:OrdersQueueDLQ5C6F7E8A-run1" || rp["maxReceiveCount"] != 5.0 {
		t.Fatalf("redrive %v", rp)
	}
	if src.Attributes["VisibilityTimeout"] != "180" || q.created[dlqAt].Attributes["MessageRetentionPeriod"] != "1209600" {
		t.Fatalf("attributes %v / %v", src.Attributes, q.created[dlqAt].Attributes)
	}

	orders, err := s.FindQueue("OrdersQueue") // also matches OrdersQueueDLQ…: exact+hash wins
	if err != nil {
		t.Fatal(err)
	}
	if orders.LogicalID != "OrdersQueue1A2B3C4D" || orders.MaxReceiveCount != 5 || orders.DLQ != "OrdersQueueDLQ5C6F7E8A" ||
		orders.VisibilityTimeout != 180*time.Second || !strings.HasSuffix(orders.URL, "/OrdersQueue1A2B3C4D-run1") {
		t.Fatalf("orders %+v", orders)
	}
	audit, err := s.FindQueue("Audit")
	if err != nil {
		t.Fatal(err)
	}
	if audit.Name != "audit-run1.fifo" || !audit.Fifo || audit.VisibilityTimeout != time.Minute {
		t.Fatalf("audit %+v", audit)
	}
	ai := q.created[slices.IndexFunc(q.created, func(in *sqs.CreateQueueInput) bool { return *in.QueueName == "audit-run1.fifo" })]
	if ai.Attributes["FifoQueue"] != "true" || ai.Attributes["ContentBasedDeduplication"] != "true" {
		t.Fatalf("fifo attrs %v", ai.Attributes)
	}
	if s.AccountID != "123456789012" {
		t.Fatalf("account %q", s.AccountID)
	}
}

func TestTable(t *testing.T) {
	s, _, d := provisionTestdata(t)
	tbl, err := s.FindTable("ReceiptsTable")
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Name != "ReceiptsTableA1B2C3D4-run1" || tbl.PartitionKey != "pk" || tbl.TTLAttribute != "expiresAt" ||
		tbl.ARN != "arn:aws:dynamodb:ddblocal:000000000000:table/ReceiptsTableA1B2C3D4-run1" {
		t.Fatalf("table %+v", tbl)
	}
	in := d.created[0]
	if in.BillingMode != ddbtypes.BillingModePayPerRequest || *in.KeySchema[0].AttributeName != "pk" ||
		in.KeySchema[0].KeyType != ddbtypes.KeyTypeHash || in.AttributeDefinitions[0].AttributeType != ddbtypes.ScalarAttributeTypeS {
		t.Fatalf("create table %+v", in)
	}
	if len(d.ttl) != 1 || *d.ttl[0].TimeToLiveSpecification.AttributeName != "expiresAt" || d.describes < 2 {
		t.Fatalf("ttl %v describes %d", d.ttl, d.describes)
	}
}

func TestFunctionAndMapping(t *testing.T) {
	s, _, _ := provisionTestdata(t)
	f, err := s.FindFunction("ConsumerFunction")
	if err != nil {
		t.Fatal(err)
	}
	if f.Timeout != 30*time.Second || f.MemoryMB != 256 || f.AssetPath != "asset.abc123" || f.Name != "ConsumerFunction5E6F7A8B-run1" {
		t.Fatalf("function %+v", f)
	}
	orders := s.Queues["OrdersQueue1A2B3C4D"]
	want := map[string]string{
		"TABLE_NAME":    "ReceiptsTableA1B2C3D4-run1",
		"TABLE_ARN":     "arn:aws:dynamodb:ddblocal:000000000000:table/ReceiptsTableA1B2C3D4-run1",
		"QUEUE_URL":     orders.URL,
		"DLQ_NAME":      "OrdersQueueDLQ5C6F7E8A-run1",
		"AUDIT_URL":     "http://127.0.0.1:9324/000000000000/audit-run1.fifo",
		"SELF":          "eu-west-1:ConsumerFunction5E6F7A8B-run1",
		"SUBBED":        "ReceiptsTableA1B2C3D4-run1/" + orders.ARN,
		"ROLE":          "", // IAM is not provisioned: unresolved, with a warning
		"LEASE_SECONDS": "30",
		"MODE":          "strict",
	}
	for k, v := range want {
		if f.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, f.Env[k], v)
		}
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "ROLE") {
		t.Fatalf("warnings %q", s.Warnings)
	}
	if byEnv, err := s.FindFunctionByEnv("TABLE_NAME"); err != nil || byEnv != f {
		t.Fatalf("FindFunctionByEnv: %v", err)
	}

	m, err := s.MappingFor(f)
	if err != nil {
		t.Fatal(err)
	}
	if m.Queue != orders || m.Function != f || m.BatchSize != 10 || !m.ReportBatchItemFailures ||
		m.MaxConcurrency != 4 || m.MaxBatchingWindow != time.Second || !m.Enabled {
		t.Fatalf("mapping %+v", m)
	}
}

func TestFindErrors(t *testing.T) {
	s, _, _ := provisionTestdata(t)
	if _, err := s.FindQueue("Nope"); err == nil {
		t.Fatal("want error for no match")
	}
	if _, err := s.FindQueue(""); err == nil || !strings.Contains(err.Error(), "3 queues") {
		t.Fatalf("want ambiguity error, got %v", err)
	}
}

func TestTeardown(t *testing.T) {
	s, q, d := provisionTestdata(t)
	if err := s.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(q.deleted) != 3 || len(d.deleted) != 1 {
		t.Fatalf("deleted queues %v tables %v", q.deleted, d.deleted)
	}
	// Reverse creation order: the DLQ goes after the queue that uses it.
	dlq := slices.IndexFunc(q.deleted, func(u string) bool { return strings.HasSuffix(u, "/OrdersQueueDLQ5C6F7E8A-run1") })
	src := slices.IndexFunc(q.deleted, func(u string) bool { return strings.HasSuffix(u, "/OrdersQueue1A2B3C4D-run1") })
	if dlq < src {
		t.Fatalf("teardown order %v", q.deleted)
	}
	if err := s.Teardown(context.Background()); err != nil || len(q.deleted) != 3 {
		t.Fatalf("second teardown: %v %v", err, q.deleted)
	}
}

func TestFailureCleansUp(t *testing.T) {
	tpl, err := LoadTemplate("testdata/stack.template.json")
	if err != nil {
		t.Fatal(err)
	}
	q := &fakeSQS{failOn: "OrdersQueue1A2B3C4D"}
	if _, err := Provision(context.Background(), tpl, q, &fakeDDB{}, "x"); err == nil {
		t.Fatal("want error")
	}
	if len(q.deleted) != len(q.created) || len(q.created) == 0 {
		t.Fatalf("created %d, deleted %v", len(q.created), q.deleted)
	}
}

func TestUniqueSuffixAndNameLimits(t *testing.T) {
	if a, b := NewSuffix(), NewSuffix(); a == b || len(a) != 8 {
		t.Fatalf("suffixes %q %q", a, b)
	}
	long := strings.Repeat("Q", 100)
	tpl, _ := ParseTemplate([]byte(`{"Resources":{"` + long + `":{"Type":"AWS::SQS::Queue","Properties":{"FifoQueue":true}}}}`))
	s, err := Provision(context.Background(), tpl, &fakeSQS{}, &fakeDDB{}, "")
	if err != nil {
		t.Fatal(err)
	}
	name := s.Queues[long].Name
	if len(name) != 80 || !strings.HasSuffix(name, "-"+s.Suffix+".fifo") {
		t.Fatalf("name %q (%d)", name, len(name))
	}
}
