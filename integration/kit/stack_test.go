package kit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// fakeCFN answers as CloudFormation would for one stack.
type fakeCFN struct {
	name    string
	outputs map[string]string
}

func (f fakeCFN) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != f.name {
		return nil, errors.New("Stack with id " + aws.ToString(in.StackName) + " does not exist")
	}
	st := cfntypes.Stack{StackName: aws.String(f.name)}
	for k, v := range f.outputs {
		st.Outputs = append(st.Outputs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{st}}, nil
}

func (f fakeCFN) DescribeStackResources(context.Context, *cloudformation.DescribeStackResourcesInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error) {
	return &cloudformation.DescribeStackResourcesOutput{StackResources: []cfntypes.StackResource{
		{LogicalResourceId: aws.String("BookingsQueue"), PhysicalResourceId: aws.String("http://q"), ResourceType: aws.String("AWS::SQS::Queue")},
	}}, nil
}

func (f fakeCFN) GetTemplate(context.Context, *cloudformation.GetTemplateInput, ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error) {
	return &cloudformation.GetTemplateOutput{TemplateBody: aws.String(`{"Resources":{}}`)}, nil
}

func outputs(prefix string, key bool) map[string]string {
	o := map[string]string{
		prefix + consumer.OutputQueueURL: "http://q", prefix + consumer.OutputDeadLetterQueueURL: "http://dlq",
		prefix + consumer.OutputFunctionName: "fn", prefix + consumer.OutputNamespace: "bookings",
		prefix + consumer.OutputTable: "receipts", "ReservationsTableName": "reservations",
	}
	if key {
		o[prefix+consumer.OutputKey] = "bookingId"
	}
	return o
}

func without(o map[string]string, key string) map[string]string {
	delete(o, key)
	return o
}

// legacy renames the outputs as the construct named them before v0.3.0.
func legacy(o map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range o {
		k = strings.Replace(k, consumer.OutputTable, "IdempotencyTableName", 1)
		k = strings.Replace(k, "Bookings"+consumer.OutputNamespace, "BookingsIdempotencyNamespace", 1)
		k = strings.Replace(k, "Bookings"+consumer.OutputKey, "BookingsIdempotencyKey", 1)
		out[k] = v
	}
	return out
}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		outputs  map[string]string
		key      string
		err      string // in the error; "" for none
	}{
		{name: "prefixed", id: "Bookings", outputs: outputs("Bookings", true), key: "bookingId"},
		{name: "no key output", id: "Bookings", outputs: outputs("Bookings", false)},
		{name: "Default has no prefix", id: "Default", outputs: outputs("", true), key: "bookingId"},
		{name: "another id", id: "Orders", outputs: outputs("Bookings", true), err: `no consumer "Orders" (the construct's id; its consumers: [Bookings])`},
		{name: "an output missing", id: "Bookings", outputs: without(outputs("Bookings", true), "BookingsConsumerFunctionName"), err: "has no output ConsumerFunctionName"},
		{name: "deployed before v0.3.0", id: "Bookings", outputs: legacy(outputs("Bookings", true)), key: "bookingId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := discover(t.Context(), fakeCFN{name: "HotelLocal", outputs: tc.outputs}, "HotelLocal", tc.id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.QueueURL != "http://q" || s.DeadLetterQueueURL != "http://dlq" || s.Function != "fn" || s.Namespace != "bookings" || s.Key != tc.key {
				t.Errorf("found %+v, want the consumer's outputs (key %q)", s, tc.key)
			}
			if s.Outputs["ReservationsTableName"] != "reservations" {
				t.Errorf("outputs %v: the application's own are missing", s.Outputs)
			}
			if s.Resources["http://q"] != "AWS::SQS::Queue" || s.physical["BookingsQueue"] != "http://q" {
				t.Errorf("resources %v, physical %v", s.Resources, s.physical)
			}
		})
	}
}

func TestDiscoverNoStack(t *testing.T) {
	_, err := discover(t.Context(), fakeCFN{name: "Other"}, "HotelLocal", "Bookings")
	if err == nil || !strings.Contains(err.Error(), "deploy it first") {
		t.Fatalf("err %v, want the stack's absence", err)
	}
}
