package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// EnvRecord names the file where Run records the stack's resources for
// NothingLeft. Default: sqsidem-kit-<stack>.json in os.TempDir().
const EnvRecord = "SQSIDEM_KIT_RECORD"

// record is what Run leaves for NothingLeft.
type record struct {
	StackName string
	Resources map[string]string // physical id -> type
}

func recordPath(stack string) string {
	if p := os.Getenv(EnvRecord); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "sqsidem-kit-"+stack+".json")
}

// remembering serializes remember: two consumers of one stack, proven by
// parallel tests, record the same stack at once.
var remembering sync.Mutex

func remember(s Stack) error {
	remembering.Lock()
	defer remembering.Unlock()
	b, err := json.MarshalIndent(record{StackName: s.Name, Resources: s.Resources}, "", "  ")
	if err != nil {
		return err
	}
	p := recordPath(s.Name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

func recall(stack string) (record, error) {
	var r record
	b, err := os.ReadFile(recordPath(stack))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.StackName != stack {
		return r, fmt.Errorf("%s records stack %s, not %s", recordPath(stack), r.StackName, stack)
	}
	return r, nil
}

// NothingLeft runs after the stack is destroyed: the stack and every
// queue, table, function, event source mapping and log group Run saw in
// it are gone. Other types (roles, policies, alarms, dashboards) go with
// the stack. cfg is the SDK configuration (nil: as Run's default).
func NothingLeft(t *testing.T, stack string, cfg *aws.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	left, n, err := Leftovers(ctx, stack, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after destroy: %d of the stack's %d resources left", len(left), n)
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// Leftovers is NothingLeft's check without a test: what is left of the
// stack Run recorded ("<type> <physical id>", sorted), and how many
// resources the record holds. An error is a check that could not be made
// (no record, an API error), not a leftover.
func Leftovers(ctx context.Context, stack string, cfg *aws.Config) (left []string, recorded int, err error) {
	r, err := recall(stack)
	if err != nil {
		return nil, 0, fmt.Errorf("no record of stack %s (Run records it): %w", stack, err)
	}
	c, err := awsConfig(ctx, cfg)
	if err != nil {
		return nil, 0, err
	}
	var errs []error
	out, err := cloudformation.NewFromConfig(c).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err == nil {
		for _, st := range out.Stacks {
			if st.StackStatus != "DELETE_COMPLETE" {
				left = append(left, fmt.Sprintf("AWS::CloudFormation::Stack %s (%s)", stack, st.StackStatus))
			}
		}
	} else if !strings.Contains(err.Error(), "does not exist") {
		errs = append(errs, fmt.Errorf("stack %s: %w", stack, err))
	}
	g := goneChecker{sqs: sqs.NewFromConfig(c), ddb: dynamodb.NewFromConfig(c), fn: lambda.NewFromConfig(c), logs: cloudwatchlogs.NewFromConfig(c)}
	for _, phys := range slices.Sorted(maps.Keys(r.Resources)) {
		typ := r.Resources[phys]
		gone, err := g.gone(ctx, typ, phys)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", typ, phys, err))
		case !gone:
			left = append(left, typ+" "+phys)
		}
	}
	return left, len(r.Resources), errors.Join(errs...)
}

// Forget removes the record Run keeps of stack, if any: a command that
// runs the tests removes an earlier run's before, so that Leftovers never
// reads a stale one.
func Forget(stack string) error {
	if err := os.Remove(recordPath(stack)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

type goneChecker struct {
	sqs  *sqs.Client
	ddb  *dynamodb.Client
	fn   *lambda.Client
	logs *cloudwatchlogs.Client
}

// gone reports whether the resource phys of type typ no longer exists.
// Types not checked one by one count as gone with the stack.
func (c goneChecker) gone(ctx context.Context, typ, phys string) (bool, error) {
	var err error
	switch typ {
	case "AWS::SQS::Queue":
		_, err = c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(phys)})
		if missing := (*sqstypes.QueueDoesNotExist)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::DynamoDB::Table":
		_, err = c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
		if missing := (*ddbtypes.ResourceNotFoundException)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::Lambda::Function":
		_, err = c.fn.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(phys)})
		if missing := (*lambdatypes.ResourceNotFoundException)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::Lambda::EventSourceMapping":
		_, err = c.fn.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(phys)})
		if missing := (*lambdatypes.ResourceNotFoundException)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::Logs::LogGroup":
		out, err := c.logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(phys)})
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(out.LogGroups, func(g cwltypes.LogGroup) bool { return aws.ToString(g.LogGroupName) == phys }), nil
	default:
		return true, nil
	}
	return false, err
}
