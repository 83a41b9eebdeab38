package emu

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Dummy credentials and region for emulators; they accept any signature.
const (
	dummyKey    = "test"
	dummySecret = "test"
	dummyRegion = "us-east-1"
)

// ForTest returns DynamoDB and SQS endpoints for an integration test.
//
// If AWS_ENDPOINT_URL is set (e.g. LocalStack), nothing is started and that
// URL is returned for both. Otherwise DynamoDB Local and ElasticMQ are started
// (in parallel, ~5 s) and stopped by t.Cleanup. Cleanup functions also run
// when the test fails, calls t.FailNow, or panics in the test goroutine; a
// panic in another goroutine or a `go test -timeout` expiry exits without
// cleanups, and on Linux the emulators are then killed by Pdeathsig.
//
// Each call starts a fresh pair, so call it once per package (in a parent
// test with subtests) and isolate tests by table/queue name.
func ForTest(t testing.TB) (dynamoURL, sqsURL string) {
	t.Helper()
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		t.Logf("emu: using AWS_ENDPOINT_URL=%s, not starting emulators", ep)
		return ep, ep
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout+10*time.Second)
	defer cancel()

	var (
		wg            sync.WaitGroup
		ddb, mq       *Server
		ddbErr, mqErr error
		began         = time.Now()
		ddbDur, mqDur time.Duration
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		ddb, ddbErr = StartDynamoDB(ctx, root)
		ddbDur = time.Since(began)
	}()
	go func() {
		defer wg.Done()
		mq, mqErr = StartSQS(ctx, root)
		mqDur = time.Since(began)
	}()
	wg.Wait()
	// Register cleanups before any Fatal so a half-started pair is stopped.
	if ddb != nil {
		t.Cleanup(func() {
			if err := ddb.Stop(); err != nil {
				t.Errorf("stop DynamoDB Local: %v", err)
			}
		})
	}
	if mq != nil {
		t.Cleanup(func() {
			if err := mq.Stop(); err != nil {
				t.Errorf("stop ElasticMQ: %v", err)
			}
		})
	}
	if ddbErr != nil || mqErr != nil {
		t.Fatalf("emu: start emulators:\n%v\n%v", ddbErr, mqErr)
	}
	t.Logf("emu: DynamoDB Local %s ready in %.1fs (log %s)", ddb.URL(), ddbDur.Seconds(), ddb.LogPath())
	t.Logf("emu: ElasticMQ %s ready in %.1fs (log %s)", mq.URL(), mqDur.Seconds(), mq.LogPath())
	return ddb.URL(), mq.URL()
}

// Clients builds SDK clients for the given endpoints.
//
// With AWS_ENDPOINT_URL unset and both URLs given, the endpoints are
// emulators we started: static "test"/"test" credentials and us-east-1 are
// used, so nothing from ~/.aws or the environment can point the tests at a
// real account. With AWS_ENDPOINT_URL set (LocalStack), the default chain
// is used, falling back to the same dummies when it finds nothing. An empty
// URL leaves that client on its default (real AWS) endpoint.
func Clients(ctx context.Context, dynamoURL, sqsURL string) (*dynamodb.Client, *sqs.Client, error) {
	emulated := os.Getenv("AWS_ENDPOINT_URL") == "" && dynamoURL != "" && sqsURL != ""
	var opts []func(*config.LoadOptions) error
	if emulated {
		opts = append(opts,
			config.WithRegion(dummyRegion),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(dummyKey, dummySecret, "")),
		)
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("emu: load AWS config: %w", err)
	}
	if !emulated && os.Getenv("AWS_ENDPOINT_URL") != "" {
		if cfg.Region == "" {
			cfg.Region = dummyRegion
		}
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider(dummyKey, dummySecret, "")
		}
	}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if dynamoURL != "" {
			o.BaseEndpoint = aws.String(dynamoURL)
		}
		// DynamoDB Local omits X-Amz-Crc32 on error responses and the SDK
		// (v1.73) then checks the body against 0, logging "WARN failed to
		// close HTTP response body ... did not match expected checksum" for
		// every ConditionalCheckFailed. Real DynamoDB always sends the header.
		if emulated {
			o.DisableValidateResponseChecksum = true
		}
	})
	mq := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if sqsURL != "" {
			o.BaseEndpoint = aws.String(sqsURL)
		}
	})
	return ddb, mq, nil
}

// probeConfig is a minimal config for readiness probes: no retries (the
// caller loops), no shared config files.
func probeConfig() aws.Config {
	return aws.Config{
		Region:           dummyRegion,
		Credentials:      credentials.NewStaticCredentialsProvider(dummyKey, dummySecret, ""),
		RetryMaxAttempts: 1,
	}
}

func probeDynamoDB(ctx context.Context, url string) error {
	c := dynamodb.NewFromConfig(probeConfig(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(url)
		o.DisableValidateResponseChecksum = true
	})
	_, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	return err
}

func probeSQS(ctx context.Context, url string) error {
	c := sqs.NewFromConfig(probeConfig(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
	_, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	return err
}
