// Package provision creates, on emulators, the SQS queues and DynamoDB tables
// declared in a synthesized CloudFormation template, and reads the Lambda
// functions and event source mappings from it, so integration tests run
// against the configuration the CDK app actually deploys (timeouts, redrive,
// batch sizes, environment) rather than a hand-copied one.
package provision

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// Template is the part of a CloudFormation template this package reads.
type Template struct {
	Resources map[string]Resource `json:"Resources"`
}

// Resource is one entry of Resources.
type Resource struct {
	Type       string          `json:"Type"`
	Properties json.RawMessage `json:"Properties"`
	Metadata   map[string]any  `json:"Metadata"`
}

// LoadTemplate reads a template JSON file (e.g. cdk.out/<Stack>.template.json).
func LoadTemplate(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	return ParseTemplate(b)
}

// ParseTemplate parses template JSON.
func ParseTemplate(b []byte) (*Template, error) {
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("provision: parse template: %w", err)
	}
	if len(t.Resources) == 0 {
		return nil, fmt.Errorf("provision: template has no Resources")
	}
	return &t, nil
}

// num accepts a JSON number or a numeric string, as CloudFormation does.
type num struct {
	V   int
	Set bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		n.V, n.Set = int(x), true
	case string:
		i, err := strconv.Atoi(x)
		if err != nil {
			return fmt.Errorf("not a number: %q", x)
		}
		n.V, n.Set = i, true
	case nil:
	default:
		return fmt.Errorf("not a number: %s", b)
	}
	return nil
}

// boolish accepts true/false or "true"/"false".
type boolish bool

func (p *boolish) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case bool:
		*p = boolish(x)
	case string:
		bv, err := strconv.ParseBool(x)
		if err != nil {
			return fmt.Errorf("not a boolean: %q", x)
		}
		*p = boolish(bv)
	case nil:
	default:
		return fmt.Errorf("not a boolean: %s", b)
	}
	return nil
}

type queueProps struct {
	QueueName                     any     `json:"QueueName"`
	FifoQueue                     boolish `json:"FifoQueue"`
	ContentBasedDeduplication     boolish `json:"ContentBasedDeduplication"`
	VisibilityTimeout             num     `json:"VisibilityTimeout"`
	MessageRetentionPeriod        num     `json:"MessageRetentionPeriod"`
	DelaySeconds                  num     `json:"DelaySeconds"`
	ReceiveMessageWaitTimeSeconds num     `json:"ReceiveMessageWaitTimeSeconds"`
	MaximumMessageSize            num     `json:"MaximumMessageSize"`
	RedrivePolicy                 any     `json:"RedrivePolicy"` // object, or a JSON string
}

type redrivePolicy struct {
	DeadLetterTargetArn any `json:"deadLetterTargetArn"`
	MaxReceiveCount     num `json:"maxReceiveCount"`
}

type keyElem struct {
	AttributeName string `json:"AttributeName"`
	KeyType       string `json:"KeyType"`
}

type throughput struct {
	ReadCapacityUnits  num `json:"ReadCapacityUnits"`
	WriteCapacityUnits num `json:"WriteCapacityUnits"`
}

type tableProps struct {
	TableName            any       `json:"TableName"`
	KeySchema            []keyElem `json:"KeySchema"`
	AttributeDefinitions []struct {
		AttributeName string `json:"AttributeName"`
		AttributeType string `json:"AttributeType"`
	} `json:"AttributeDefinitions"`
	BillingMode            string      `json:"BillingMode"`
	ProvisionedThroughput  *throughput `json:"ProvisionedThroughput"`
	GlobalSecondaryIndexes []struct {
		IndexName  string    `json:"IndexName"`
		KeySchema  []keyElem `json:"KeySchema"`
		Projection struct {
			ProjectionType   string   `json:"ProjectionType"`
			NonKeyAttributes []string `json:"NonKeyAttributes"`
		} `json:"Projection"`
		ProvisionedThroughput *throughput `json:"ProvisionedThroughput"`
	} `json:"GlobalSecondaryIndexes"`
	TimeToLiveSpecification *struct {
		AttributeName string  `json:"AttributeName"`
		Enabled       boolish `json:"Enabled"`
	} `json:"TimeToLiveSpecification"`
}

type functionProps struct {
	FunctionName any    `json:"FunctionName"`
	Handler      string `json:"Handler"`
	Runtime      string `json:"Runtime"`
	Timeout      num    `json:"Timeout"`
	MemorySize   num    `json:"MemorySize"`
	Environment  struct {
		Variables map[string]any `json:"Variables"`
	} `json:"Environment"`
}

type mappingProps struct {
	EventSourceArn                 any      `json:"EventSourceArn"`
	FunctionName                   any      `json:"FunctionName"`
	BatchSize                      num      `json:"BatchSize"`
	Enabled                        *boolish `json:"Enabled"`
	FunctionResponseTypes          []string `json:"FunctionResponseTypes"`
	MaximumBatchingWindowInSeconds num      `json:"MaximumBatchingWindowInSeconds"`
	ScalingConfig                  struct {
		MaximumConcurrency num `json:"MaximumConcurrency"`
	} `json:"ScalingConfig"`
}

func decodeProps(id string, r Resource, v any) error {
	if len(r.Properties) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Properties, v); err != nil {
		return fmt.Errorf("provision: %s (%s) properties: %w", id, r.Type, err)
	}
	return nil
}
