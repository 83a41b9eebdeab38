package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"
)

// credentialsTimeout bounds the search for credentials: without any, the
// chain ends at the EC2 instance metadata service, which off EC2 only
// answers with timeouts.
const credentialsTimeout = 10 * time.Second

// connect loads the AWS configuration as the AWS CLI does — the default
// chain, --profile and --region over it, AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> honoured by the SDK, --endpoint-url over
// those — and checks that there are credentials before any request, so
// that their absence is one clear line, not a failed request.
func connect(ctx context.Context, g globals, stderr io.Writer) (*clients, error) {
	var opts []func(*config.LoadOptions) error
	if g.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(g.profile))
	}
	if g.region != "" {
		opts = append(opts, config.WithRegion(g.region))
	}
	// The SDK logs to stderr by default (retries, checksum warnings);
	// an operator reads one line per problem, unless --debug.
	opts = append(opts, config.WithLogger(logging.Nop{}))
	if g.debug {
		opts = append(opts,
			config.WithLogger(logging.NewStandardLogger(stderr)),
			config.WithClientLogMode(aws.LogRetries|aws.LogRequest|aws.LogResponse))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: pass --region, or set AWS_REGION or the profile's region")
	}
	cctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(cctx); err != nil {
		return nil, fmt.Errorf("%w: pass --profile, or set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (%v)", errNoCredentials, err)
	}
	var endpoint *string
	if g.endpointURL != "" {
		endpoint = aws.String(g.endpointURL)
	}
	return &clients{
		ddb: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if endpoint != nil {
				o.BaseEndpoint = endpoint
			}
		}),
		sqs: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if endpoint != nil {
				o.BaseEndpoint = endpoint
			}
		}),
		cfn: cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) {
			if endpoint != nil {
				o.BaseEndpoint = endpoint
			}
		}),
		cw: cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
			if endpoint != nil {
				o.BaseEndpoint = endpoint
			}
		}),
	}, nil
}
