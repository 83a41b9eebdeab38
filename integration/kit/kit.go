package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// App describes the application under test. Stack, Consumer, Message and
// Applied are required; the other fields add or tune subtests.
type App struct {
	// Stack is the deployed CloudFormation stack's name.
	Stack string
	// Consumer is the construct's id (exactlyonce.NewConsumer): its
	// outputs are Consumer + consumer.Output*. "Default" adds no prefix,
	// as in the construct.
	Consumer string
	// Message returns a valid message for key, one the effect applies.
	// variant 0 is the key's first payload; another variant must return
	// another payload for the same key (the mismatch subtest).
	Message func(key string, variant int) Message
	// Applied is the application's probe: how often each key's effect
	// took place (0 for a key never applied). It is called repeatedly,
	// from several goroutines at once, and must read consistently (a
	// DynamoDB ConsistentRead, for instance).
	Applied func(ctx context.Context, s Stack, keys []string) (map[string]int, error)

	// Seed, if set, writes what the effect needs before keys can be
	// applied (the order a payment refers to, say); Run calls it once, with
	// every key of the run, before it sends anything. nil: nothing to seed.
	Seed func(ctx context.Context, s Stack, keys []string) error
	// Malformed returns a message carrying key that the effect refuses
	// (returns an error for), so that it ends in the dead-letter queue.
	// nil: the malformed subtest is skipped.
	Malformed func(key string) Message
	// AWS is the SDK configuration. nil: config.LoadDefaultConfig, with
	// LocalStack's dummy credentials and region when AWS_ENDPOINT_URL is
	// set and the environment has none.
	AWS *aws.Config
	// Timeout bounds the wait for the queue to drain and the dead-letter
	// queue to fill. 0: (maxReceiveCount+1) visibility timeouts of the
	// consumer's queue, plus DefaultMargin.
	Timeout time.Duration
}

// DefaultMargin is added to the redrive's own time in the default
// Timeout: the event source mapping's polling and a loaded machine.
const DefaultMargin = 90 * time.Second

// Message is what the kit sends: a body and string message attributes.
// The kit adds AttributeRun.
type Message struct {
	Body       string
	Attributes map[string]string
}

// JSON returns a Message whose body is v as JSON. It panics if v cannot
// be marshalled: v is a test's own value.
func JSON(v any) Message {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kit.JSON: %v", err))
	}
	return Message{Body: string(b)}
}

// AttributeRun is the message attribute on every message the kit sends:
// the run's id and the message's label (the same on every copy).
const AttributeRun = "sqsidem.kit"

func (app App) check() error {
	switch {
	case app.Stack == "":
		return fmt.Errorf("kit: App.Stack is required")
	case app.Consumer == "":
		return fmt.Errorf("kit: App.Consumer is required (the construct's id)")
	case app.Message == nil:
		return fmt.Errorf("kit: App.Message is required")
	case app.Applied == nil:
		return fmt.Errorf("kit: App.Applied is required (the application's probe)")
	}
	return nil
}

// awsConfig is app.AWS, or the SDK's default configuration.
func awsConfig(ctx context.Context, app *aws.Config) (aws.Config, error) {
	if app != nil {
		return *app, nil
	}
	var opts []func(*config.LoadOptions) error
	if os.Getenv("AWS_ENDPOINT_URL") != "" {
		opts = append(opts, config.WithDefaultRegion("us-east-1"))
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
			opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("kit: AWS configuration: %w", err)
	}
	return cfg, nil
}
