package provision

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSAPI is the part of the SQS client provisioning uses.
type SQSAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// DynamoAPI is the part of the DynamoDB client provisioning uses.
type DynamoAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

var (
	_ SQSAPI    = (*sqs.Client)(nil)
	_ DynamoAPI = (*dynamodb.Client)(nil)
)

// Queue is a created SQS queue.
type Queue struct {
	LogicalID         string
	Name, URL, ARN    string
	Fifo              bool
	VisibilityTimeout time.Duration // 30s when the template leaves it unset
	MaxReceiveCount   int           // 0 without a redrive policy
	DLQ               string        // logical id of the dead-letter queue, if in the template
	DLQARN            string
}

// Table is a created DynamoDB table.
type Table struct {
	LogicalID    string
	Name, ARN    string
	PartitionKey string
	SortKey      string
	TTLAttribute string // empty if TTL is not enabled
}

// Function is a Lambda function read (not deployed) from the template.
type Function struct {
	LogicalID string
	Name, ARN string
	Handler   string
	Runtime   string
	Timeout   time.Duration // 3s when unset, as Lambda
	MemoryMB  int           // 128 when unset
	Env       map[string]string
	AssetPath string // Metadata aws:asset:path, if CDK recorded one
}

// Mapping is an SQS event source mapping read from the template.
type Mapping struct {
	LogicalID               string
	QueueID, FunctionID     string // logical ids
	Queue                   *Queue
	Function                *Function
	BatchSize               int // 10 when unset
	ReportBatchItemFailures bool
	MaxConcurrency          int // ScalingConfig.MaximumConcurrency; 0 = unset
	MaxBatchingWindow       time.Duration
	Enabled                 bool
}

// Stack is everything Provision created or read.
type Stack struct {
	Suffix    string
	Region    string
	AccountID string
	Queues    map[string]*Queue
	Tables    map[string]*Table
	Functions map[string]*Function
	Mappings  []*Mapping
	// Warnings lists references that could not be resolved (left as "") and
	// properties that were ignored.
	Warnings []string

	sqs     SQSAPI
	ddb     DynamoAPI
	cleanup []func(context.Context) error // in creation order
}

// Option configures Provision.
type Option func(*Stack)

// WithRegion sets the region used for AWS::Region and Lambda ARNs
// (default $AWS_REGION, else us-east-1).
func WithRegion(r string) Option { return func(s *Stack) { s.Region = r } }

// WithAccountID sets AWS::AccountId (default: the account in the first
// queue ARN, else 000000000000).
func WithAccountID(a string) Option { return func(s *Stack) { s.AccountID = a } }

// NewSuffix returns a short random suffix for resource names.
func NewSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Provision creates the template's queues (dead-letter queues first) and
// tables with names unique to this run (suffix; NewSuffix() if empty), then
// reads functions and event source mappings with every reference resolved to
// what was created. Explicit QueueName/TableName/FunctionName values keep
// their text but get the suffix too, so parallel runs never collide. On error
// everything created so far is deleted.
func Provision(ctx context.Context, tpl *Template, sqsc SQSAPI, ddb DynamoAPI, suffix string, opts ...Option) (*Stack, error) {
	if suffix == "" {
		suffix = NewSuffix()
	}
	s := &Stack{
		Suffix:    suffix,
		Region:    os.Getenv("AWS_REGION"),
		Queues:    map[string]*Queue{},
		Tables:    map[string]*Table{},
		Functions: map[string]*Function{},
		sqs:       sqsc,
		ddb:       ddb,
	}
	for _, o := range opts {
		o(s)
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	if err := s.build(ctx, tpl); err != nil {
		if terr := s.Teardown(context.WithoutCancel(ctx)); terr != nil {
			err = errors.Join(err, fmt.Errorf("provision: cleanup after failure: %w", terr))
		}
		return nil, err
	}
	return s, nil
}

func (s *Stack) build(ctx context.Context, tpl *Template) error {
	ids := make([]string, 0, len(tpl.Resources))
	for id := range tpl.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids) // deterministic order and warnings
	for _, id := range ids {
		if t := tpl.Resources[id].Type; t == "AWS::SQS::Queue" {
			if err := s.createQueue(ctx, tpl, id, nil); err != nil {
				return err
			}
		}
	}
	if s.AccountID == "" {
		s.AccountID = "000000000000"
	}
	for _, id := range ids {
		switch tpl.Resources[id].Type {
		case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
			if err := s.createTable(ctx, id, tpl.Resources[id]); err != nil {
				return err
			}
		}
	}
	// Names first, so functions' environments can reference each other.
	props := map[string]*functionProps{}
	for _, id := range ids {
		r := tpl.Resources[id]
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		var p functionProps
		if err := decodeProps(id, r, &p); err != nil {
			return err
		}
		props[id] = &p
		name := s.name(id, p.FunctionName, 64, "")
		f := &Function{
			LogicalID: id,
			Name:      name,
			ARN:       fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", s.Region, s.AccountID, name),
			Handler:   p.Handler,
			Runtime:   p.Runtime,
			Timeout:   3 * time.Second,
			MemoryMB:  128,
			Env:       map[string]string{},
		}
		if p.Timeout.Set {
			f.Timeout = time.Duration(p.Timeout.V) * time.Second
		}
		if p.MemorySize.Set {
			f.MemoryMB = p.MemorySize.V
		}
		if ap, ok := r.Metadata["aws:asset:path"].(string); ok {
			f.AssetPath = ap
		}
		s.Functions[id] = f
	}
	for id, p := range props {
		for k, v := range p.Environment.Variables {
			s.Functions[id].Env[k] = s.resolve(v, id+".Environment."+k)
		}
	}
	for _, id := range ids {
		r := tpl.Resources[id]
		if r.Type == "AWS::Lambda::EventSourceMapping" {
			if err := s.readMapping(id, r); err != nil {
				return err
			}
		}
	}
	sort.Slice(s.Mappings, func(i, j int) bool { return s.Mappings[i].LogicalID < s.Mappings[j].LogicalID })
	sort.Strings(s.Warnings)
	return nil
}

// name derives a resource name: the explicit name (if a literal) or the
// logical id, plus the run suffix, cut to max, keeping a required ending.
func (s *Stack) name(id string, explicit any, max int, ending string) string {
	base := id
	if str, ok := explicit.(string); ok && str != "" {
		base = strings.TrimSuffix(str, ending)
	} else if explicit != nil {
		s.warnf("%s: non-literal name %v ignored; derived from the logical id", id, explicit)
	}
	tail := "-" + s.Suffix + ending
	if len(base)+len(tail) > max {
		base = base[:max-len(tail)]
	}
	return base + tail
}

func (s *Stack) warnf(format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...))
}

// createQueue creates queue id after its dead-letter queue. visiting guards
// against redrive cycles.
func (s *Stack) createQueue(ctx context.Context, tpl *Template, id string, visiting []string) error {
	if _, done := s.Queues[id]; done {
		return nil
	}
	if slices.Contains(visiting, id) {
		return fmt.Errorf("provision: redrive cycle through %v", append(visiting, id))
	}
	r := tpl.Resources[id]
	var p queueProps
	if err := decodeProps(id, r, &p); err != nil {
		return err
	}
	q := &Queue{LogicalID: id, Fifo: bool(p.FifoQueue), VisibilityTimeout: 30 * time.Second}
	attrs := map[string]string{}
	ending := ""
	if q.Fifo {
		ending = ".fifo"
		attrs["FifoQueue"] = "true"
		if p.ContentBasedDeduplication {
			attrs["ContentBasedDeduplication"] = "true"
		}
	}
	setNum := func(k string, n num) {
		if n.Set {
			attrs[k] = strconv.Itoa(n.V)
		}
	}
	setNum("VisibilityTimeout", p.VisibilityTimeout)
	setNum("MessageRetentionPeriod", p.MessageRetentionPeriod)
	setNum("DelaySeconds", p.DelaySeconds)
	setNum("ReceiveMessageWaitTimeSeconds", p.ReceiveMessageWaitTimeSeconds)
	setNum("MaximumMessageSize", p.MaximumMessageSize)
	if p.VisibilityTimeout.Set {
		q.VisibilityTimeout = time.Duration(p.VisibilityTimeout.V) * time.Second
	}
	if p.RedrivePolicy != nil {
		rp, err := parseRedrive(p.RedrivePolicy)
		if err != nil {
			return fmt.Errorf("provision: %s RedrivePolicy: %w", id, err)
		}
		dlqID, attr, isRef := refTarget(rp.DeadLetterTargetArn)
		switch {
		case isRef && attr == "Arn" && tpl.Resources[dlqID].Type == "AWS::SQS::Queue":
			if err := s.createQueue(ctx, tpl, dlqID, append(visiting, id)); err != nil {
				return err
			}
			q.DLQ, q.DLQARN = dlqID, s.Queues[dlqID].ARN
		default:
			if str, ok := rp.DeadLetterTargetArn.(string); ok {
				q.DLQARN = str
			} else {
				return fmt.Errorf("provision: %s: unsupported deadLetterTargetArn %v", id, rp.DeadLetterTargetArn)
			}
		}
		q.MaxReceiveCount = rp.MaxReceiveCount.V
		doc, _ := json.Marshal(map[string]any{"deadLetterTargetArn": q.DLQARN, "maxReceiveCount": q.MaxReceiveCount})
		attrs["RedrivePolicy"] = string(doc)
	}
	q.Name = s.name(id, p.QueueName, 80, ending)

	out, err := s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: attrs})
	if err != nil {
		return fmt.Errorf("provision: create queue %s (%s): %w", q.Name, id, err)
	}
	q.URL = aws.ToString(out.QueueUrl)
	url := q.URL
	s.cleanup = append(s.cleanup, func(ctx context.Context) error {
		_, err := s.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		return err
	})
	ga, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return fmt.Errorf("provision: queue %s ARN: %w", q.Name, err)
	}
	q.ARN = ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if q.ARN == "" {
		return fmt.Errorf("provision: queue %s: no QueueArn attribute", q.Name)
	}
	if parts := strings.Split(q.ARN, ":"); s.AccountID == "" && len(parts) == 6 {
		s.AccountID = parts[4]
	}
	s.Queues[id] = q
	return nil
}

func parseRedrive(v any) (redrivePolicy, error) {
	var rp redrivePolicy
	var b []byte
	if str, ok := v.(string); ok { // legacy: a JSON document in a string
		b = []byte(str)
	} else {
		b, _ = json.Marshal(v)
	}
	err := json.Unmarshal(b, &rp)
	return rp, err
}

func (s *Stack) createTable(ctx context.Context, id string, r Resource) error {
	var p tableProps
	if err := decodeProps(id, r, &p); err != nil {
		return err
	}
	t := &Table{LogicalID: id, Name: s.name(id, p.TableName, 255, "")}
	in := &dynamodb.CreateTableInput{TableName: aws.String(t.Name), BillingMode: ddbtypes.BillingModePayPerRequest}
	for _, k := range p.KeySchema {
		in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: ddbtypes.KeyType(k.KeyType)})
		if k.KeyType == "HASH" {
			t.PartitionKey = k.AttributeName
		} else {
			t.SortKey = k.AttributeName
		}
	}
	for _, a := range p.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(a.AttributeName), AttributeType: ddbtypes.ScalarAttributeType(a.AttributeType)})
	}
	// CloudFormation's default is PROVISIONED; emulators don't care, but keep
	// the template's choice so the request is the one AWS would get.
	if p.BillingMode == "" || p.BillingMode == "PROVISIONED" {
		if p.ProvisionedThroughput != nil {
			in.BillingMode = ddbtypes.BillingModeProvisioned
			in.ProvisionedThroughput = toThroughput(p.ProvisionedThroughput)
		}
	}
	for _, g := range p.GlobalSecondaryIndexes {
		gsi := ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(g.IndexName),
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(g.Projection.ProjectionType), NonKeyAttributes: g.Projection.NonKeyAttributes},
		}
		for _, k := range g.KeySchema {
			gsi.KeySchema = append(gsi.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: ddbtypes.KeyType(k.KeyType)})
		}
		if in.BillingMode == ddbtypes.BillingModeProvisioned && g.ProvisionedThroughput != nil {
			gsi.ProvisionedThroughput = toThroughput(g.ProvisionedThroughput)
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, gsi)
	}
	out, err := s.ddb.CreateTable(ctx, in)
	if err != nil {
		return fmt.Errorf("provision: create table %s (%s): %w", t.Name, id, err)
	}
	name := t.Name
	s.cleanup = append(s.cleanup, func(ctx context.Context) error {
		_, err := s.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		return err
	})
	if out.TableDescription != nil {
		t.ARN = aws.ToString(out.TableDescription.TableArn)
	}
	if err := s.waitActive(ctx, t); err != nil {
		return err
	}
	if ttl := p.TimeToLiveSpecification; ttl != nil && bool(ttl.Enabled) && ttl.AttributeName != "" {
		_, err := s.ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(t.Name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(ttl.AttributeName), Enabled: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("provision: table %s TTL: %w", t.Name, err)
		}
		t.TTLAttribute = ttl.AttributeName
	}
	if t.ARN == "" {
		t.ARN = fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", s.Region, s.AccountID, t.Name)
	}
	s.Tables[id] = t
	return nil
}

func toThroughput(t *throughput) *ddbtypes.ProvisionedThroughput {
	return &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(int64(t.ReadCapacityUnits.V)), WriteCapacityUnits: aws.Int64(int64(t.WriteCapacityUnits.V))}
}

func (s *Stack) waitActive(ctx context.Context, t *Table) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		out, err := s.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
		if err != nil {
			return fmt.Errorf("provision: describe table %s: %w", t.Name, err)
		}
		if out.Table != nil && out.Table.TableStatus == ddbtypes.TableStatusActive {
			if arn := aws.ToString(out.Table.TableArn); arn != "" {
				t.ARN = arn
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("provision: table %s not ACTIVE: %w", t.Name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Stack) readMapping(id string, r Resource) error {
	var p mappingProps
	if err := decodeProps(id, r, &p); err != nil {
		return err
	}
	m := &Mapping{LogicalID: id, BatchSize: 10, Enabled: true, MaxConcurrency: p.ScalingConfig.MaximumConcurrency.V}
	if p.BatchSize.Set {
		m.BatchSize = p.BatchSize.V
	}
	if p.Enabled != nil {
		m.Enabled = bool(*p.Enabled)
	}
	m.ReportBatchItemFailures = slices.Contains(p.FunctionResponseTypes, "ReportBatchItemFailures")
	m.MaxBatchingWindow = time.Duration(p.MaximumBatchingWindowInSeconds.V) * time.Second

	if qid, _, ok := refTarget(p.EventSourceArn); ok && s.Queues[qid] != nil {
		m.QueueID, m.Queue = qid, s.Queues[qid]
	} else {
		// Not one of our queues (a stream, or an external ARN): not ours to run.
		s.warnf("%s: event source %v is not a queue in this template; mapping skipped", id, p.EventSourceArn)
		return nil
	}
	if fid, _, ok := refTarget(p.FunctionName); ok && s.Functions[fid] != nil {
		m.FunctionID, m.Function = fid, s.Functions[fid]
	} else if name, ok := p.FunctionName.(string); ok {
		for fid, f := range s.Functions {
			if f.Name == name || f.ARN == name || fid == name {
				m.FunctionID, m.Function = fid, f
			}
		}
	}
	if m.Function == nil {
		return fmt.Errorf("provision: %s: FunctionName %v is not a function in this template", id, p.FunctionName)
	}
	s.Mappings = append(s.Mappings, m)
	return nil
}

// refTarget returns the logical id (and attribute, "" for Ref) a Ref or
// Fn::GetAtt points at.
func refTarget(v any) (id, attr string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", "", false
	}
	if ref, ok := m["Ref"].(string); ok {
		return ref, "", true
	}
	switch ga := m["Fn::GetAtt"].(type) {
	case []any:
		if len(ga) == 2 {
			id, _ := ga[0].(string)
			attr, _ := ga[1].(string)
			return id, attr, id != ""
		}
	case string:
		if id, attr, found := strings.Cut(ga, "."); found {
			return id, attr, true
		}
	}
	return "", "", false
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// resolve evaluates a property value to a string: literals, Ref, Fn::GetAtt,
// Fn::Join, Fn::Sub and Fn::Select. Anything else becomes "" plus a warning.
func (s *Stack) resolve(v any, where string) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	case map[string]any:
		if id, attr, ok := refTarget(x); ok {
			if out, ok := s.lookup(id, attr); ok {
				return out
			}
			s.warnf("%s: cannot resolve %v", where, x)
			return ""
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			delim, _ := j[0].(string)
			parts, _ := j[1].([]any)
			strs := make([]string, len(parts))
			for i, p := range parts {
				strs[i] = s.resolve(p, where)
			}
			return strings.Join(strs, delim)
		}
		if sub, ok := x["Fn::Sub"]; ok {
			return s.sub(sub, where)
		}
		if sel, ok := x["Fn::Select"].([]any); ok && len(sel) == 2 {
			idx, err := strconv.Atoi(s.resolve(sel[0], where))
			if list, ok := sel[1].([]any); ok && err == nil && idx >= 0 && idx < len(list) {
				return s.resolve(list[idx], where)
			}
		}
	}
	s.warnf("%s: unsupported value %v", where, v)
	return ""
}

func (s *Stack) sub(v any, where string) string {
	var (
		tmpl string
		vars map[string]any
	)
	switch x := v.(type) {
	case string:
		tmpl = x
	case []any:
		if len(x) == 2 {
			tmpl, _ = x[0].(string)
			vars, _ = x[1].(map[string]any)
		}
	}
	return subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[2 : len(m)-1]
		if val, ok := vars[name]; ok {
			return s.resolve(val, where)
		}
		id, attr, _ := strings.Cut(name, ".")
		if out, ok := s.lookup(id, attr); ok {
			return out
		}
		s.warnf("%s: cannot resolve ${%s}", where, name)
		return ""
	})
}

// lookup resolves Ref (attr "") or Fn::GetAtt of a logical id or pseudo
// parameter, with CloudFormation's return values.
func (s *Stack) lookup(id, attr string) (string, bool) {
	if attr == "" {
		switch id {
		case "AWS::Region":
			return s.Region, true
		case "AWS::AccountId":
			return s.AccountID, true
		case "AWS::Partition":
			return "aws", true
		case "AWS::URLSuffix":
			return "amazonaws.com", true
		case "AWS::StackName":
			return "stack-" + s.Suffix, true
		case "AWS::NoValue":
			return "", true
		}
	}
	if q := s.Queues[id]; q != nil {
		switch attr {
		case "", "QueueUrl":
			return q.URL, true
		case "Arn":
			return q.ARN, true
		case "QueueName":
			return q.Name, true
		}
	}
	if t := s.Tables[id]; t != nil {
		switch attr {
		case "":
			return t.Name, true
		case "Arn":
			return t.ARN, true
		}
	}
	if f := s.Functions[id]; f != nil {
		switch attr {
		case "":
			return f.Name, true
		case "Arn":
			return f.ARN, true
		}
	}
	return "", false
}

// Teardown deletes what Provision created, newest first. It is idempotent.
func (s *Stack) Teardown(ctx context.Context) error {
	var errs []error
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		if err := s.cleanup[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.cleanup = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("provision: teardown: %w", err)
	}
	return nil
}

// FindQueue returns the queue whose logical id starts with prefix. CDK ids
// are the construct path plus an 8-hex-digit hash, so "OrdersQueue" finds
// "OrdersQueue1A2B3C4D"; when several match (e.g. "OrdersQueueDLQ..."), the
// one that is exactly prefix+hash wins.
func (s *Stack) FindQueue(prefix string) (*Queue, error) { return find(s.Queues, "queue", prefix) }

// FindTable is FindQueue for tables.
func (s *Stack) FindTable(prefix string) (*Table, error) { return find(s.Tables, "table", prefix) }

// FindFunction is FindQueue for functions.
func (s *Stack) FindFunction(prefix string) (*Function, error) {
	return find(s.Functions, "function", prefix)
}

// FindFunctionByEnv returns the one function whose environment defines key.
func (s *Stack) FindFunctionByEnv(key string) (*Function, error) {
	var found []*Function
	for _, f := range s.Functions {
		if _, ok := f.Env[key]; ok {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("provision: %d functions define env %s, want 1", len(found), key)
	}
	return found[0], nil
}

// MappingFor returns the event source mapping whose function is f.
func (s *Stack) MappingFor(f *Function) (*Mapping, error) {
	var found []*Mapping
	for _, m := range s.Mappings {
		if m.Function == f {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("provision: %d mappings for function %s, want 1", len(found), f.LogicalID)
	}
	return found[0], nil
}

var cdkHash = regexp.MustCompile(`^[0-9A-F]{8}$`)

func find[T any](m map[string]*T, kind, prefix string) (*T, error) {
	var all, exact []string
	for id := range m {
		if strings.HasPrefix(id, prefix) {
			all = append(all, id)
			if rest := id[len(prefix):]; rest == "" || cdkHash.MatchString(rest) {
				exact = append(exact, id)
			}
		}
	}
	sort.Strings(all)
	switch {
	case len(all) == 1:
		return m[all[0]], nil
	case len(exact) == 1:
		return m[exact[0]], nil
	case len(all) == 0:
		return nil, fmt.Errorf("provision: no %s with logical id prefix %q", kind, prefix)
	}
	return nil, fmt.Errorf("provision: %d %ss match logical id prefix %q: %v", len(all), kind, prefix, all)
}
