// Package system runs one copy of the stack locally: resources provisioned
// from the synthesized template, the real consumer and producer binaries
// under the Lambda Runtime API harness, and an event-source-mapping poller
// between the queue and the consumers. The integration tests and `make demo`
// drive it and check the invariant with it.
package system

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/partner"
	"github.com/exactlyonce/sqsidem/integration/internal/provision"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// Config says what to run.
type Config struct {
	Template       string // synthesized CloudFormation template (test profile)
	DynamoURL      string
	SQSURL         string
	ConsumerBinary string // host builds with -tags lambda.norpc,sqsidem_faults (BuildLambdas)
	ProducerBinary string
	// Consumers is the number of consumer instances (default 4). The poller
	// runs min(Consumers × PerProcess, the mapping's maximum concurrency)
	// loops.
	Consumers int
	// PerProcess is how many invocations one consumer process runs at once
	// (AWS_LAMBDA_MAX_CONCURRENCY, as one execution environment of Lambda
	// Managed Instances; default 1): one Guard, its cache and its owed
	// receipts shared by them, and a crash, a kill or a freeze takes every
	// invocation in the process.
	PerProcess int
	// Mode runs the consumer in this mode rather than the template's;
	// Start fails with ErrMode when the effect does not implement it.
	Mode string
	// NewProbe makes the effect's probe (default EffectProbe).
	NewProbe NewProbe
	// ConsumerEnv and ProducerEnv are added to the template's variables.
	ConsumerEnv map[string]string
	ProducerEnv map[string]string
	// Partner configures the suite's stand-in for the effect's remote
	// system (partner.Start); it counts every call, repeats included.
	Partner []partner.Option
	// NoPoller leaves the queue alone: the test invokes consumers itself.
	NoPoller bool
	// Log receives the Lambdas' raw output (default: discarded).
	Log io.Writer
}

// System is a running copy of the stack.
type System struct {
	Stack    *provision.Stack
	Queue    *provision.Queue
	DLQ      *provision.Queue
	Mapping  *provision.Mapping
	Receipts string // idempotency table
	// Mode is the consumer's mode, Key its key (the message attribute,
	// else the body's field: the template's IDEM_KEY).
	Mode, Key string
	// Promise is what the consumer's instances said of themselves at init
	// (their consumer.LogReady line): mode, unknown-outcome policy,
	// reconcile, and the guarantee those make. The scenarios check it.
	Promise Ready
	// Probe answers for the effect.
	Probe Probe
	// Partner is the stand-in for the effect's remote system: every
	// setting whose test value names the suite's partner
	// (contract.SuitePartner) points here; its faults are the test's.
	Partner  *partner.Server
	Consumer *lambdarun.Pool
	Producer *lambdarun.Pool
	Poller   *esm.Poller
	DDB      *dynamodb.Client
	SQS      *sqs.Client
	// Records holds the outcome of every record the consumers logged.
	Records *Records
	// Requests counts the Lambdas' DynamoDB requests on the wire, and
	// injects faults into them when told (Requests.SetDecider).
	Requests *faultproxy.Proxy

	store      *dynamostore.Store
	namespace  string
	stopPoller context.CancelFunc
	pollerDone chan struct{}
	closeOnce  sync.Once
}

// Start provisions the stack and starts the Lambdas. Close stops
// everything, also when Start fails half way.
func Start(ctx context.Context, cfg Config) (_ *System, err error) {
	if cfg.Consumers <= 0 {
		cfg.Consumers = 4
	}
	cfg.PerProcess = max(cfg.PerProcess, 1)
	if cfg.NewProbe == nil {
		cfg.NewProbe = EffectProbe
	}
	if modes := cfg.NewProbe(nil, func(string) string { return "" }).Modes(); cfg.Mode != "" && !slices.Contains(modes, cfg.Mode) {
		return nil, fmt.Errorf("%w: %s (it implements %v)", ErrMode, cfg.Mode, modes)
	}
	tpl, err := provision.LoadTemplate(cfg.Template)
	if err != nil {
		return nil, fmt.Errorf("system: %w (run `make synth-test`)", err)
	}
	ddb, sqsc, err := emu.Clients(ctx, cfg.DynamoURL, cfg.SQSURL)
	if err != nil {
		return nil, err
	}
	s := &System{DDB: ddb, SQS: sqsc, Records: NewRecords()}
	defer func() {
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
		}
	}()
	if s.Stack, err = provision.Provision(ctx, tpl, sqsc, ddb, provision.NewSuffix()); err != nil {
		return nil, fmt.Errorf("system: provision: %w", err)
	}
	consumerFn, producerFn, err := s.find()
	if err != nil {
		return nil, err
	}
	if s.store, err = dynamostore.New(ddb, s.Receipts); err != nil {
		return nil, err
	}
	if s.Requests, err = faultproxy.Start(cfg.DynamoURL); err != nil {
		return nil, err
	}
	s.namespace, s.Key, s.Mode = consumerFn.Env[consumer.EnvNamespace], consumerFn.Env[consumer.EnvKey], consumerFn.Env[consumer.EnvMode]
	consumerEnv, fnEnv := map[string]string{}, consumerFn.Env
	if cfg.Mode != "" && cfg.Mode != s.Mode {
		s.Mode, consumerEnv[consumer.EnvMode] = cfg.Mode, cfg.Mode
		fnEnv = suiteSettings(fnEnv, cfg.Mode)
		if cfg.Mode == consumer.ModeTransactional {
			// As the app synthesizes that mode: it leaves no unknown
			// outcome, and the app refuses hold there.
			consumerEnv[consumer.EnvUnknownOutcome] = consumer.DefaultUnknownOutcome
		}
	}
	if s.Key == "" {
		return nil, fmt.Errorf("system: the consumer's environment names no key (%s): %v", consumer.EnvKey, consumerFn.Env)
	}
	if s.Partner, err = partner.Start(append([]partner.Option{partner.IgnoreKey()}, cfg.Partner...)...); err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	env := s.lambdaEnv(cfg.SQSURL)
	consumerEnv = s.Partner.Point(merge(fnEnv, env, consumerEnv, cfg.ConsumerEnv))
	s.Probe = cfg.NewProbe(ddb, func(k string) string { return consumerEnv[k] })

	logs := cfg.Log
	if logs == nil {
		logs = io.Discard
	}
	consumerLog := io.MultiWriter(logs, s.Records)
	s.Consumer, err = lambdarun.Start(ctx, lambdarun.Function{
		Name:        "consumer",
		Binary:      cfg.ConsumerBinary,
		Env:         consumerEnv,
		Timeout:     consumerFn.Timeout,
		MemoryMB:    consumerFn.MemoryMB,
		Concurrency: cfg.PerProcess,
	}, cfg.Consumers, lambdarun.WithLog(consumerLog))
	if err != nil {
		return nil, fmt.Errorf("system: start consumers: %w", err)
	}
	if s.Promise, err = s.awaitPromise(ctx, cfg.Consumers); err != nil {
		return nil, err
	}
	if s.Promise.Mode != s.Mode {
		return nil, fmt.Errorf("system: the consumer was started in %s mode and says it runs in %s", s.Mode, s.Promise)
	}
	s.Producer, err = lambdarun.Start(ctx, lambdarun.Function{
		Name:     "producer",
		Binary:   cfg.ProducerBinary,
		Env:      merge(producerFn.Env, env, cfg.ProducerEnv),
		Timeout:  producerFn.Timeout,
		MemoryMB: producerFn.MemoryMB,
	}, 2, lambdarun.WithLog(logs))
	if err != nil {
		return nil, fmt.Errorf("system: start producers: %w", err)
	}
	if !cfg.NoPoller {
		s.startPoller(min(cfg.Consumers*cfg.PerProcess, max(s.Mapping.MaxConcurrency, 1)))
	}
	return s, nil
}

// find locates the resources by what they are to each other, not by their
// logical ids: the consumer is the function with the event source mapping,
// the queue is the mapping's and the DLQ the queue's redrive target, the
// receipt table is the one the consumer's environment names, the producer
// is the function that sends to the queue.
func (s *System) find() (fn, producer *provision.Function, err error) {
	if len(s.Stack.Mappings) != 1 || s.Stack.Mappings[0].Function == nil || s.Stack.Mappings[0].Queue == nil {
		return nil, nil, fmt.Errorf("system: want one event source mapping from a queue to a function in the template, found %d", len(s.Stack.Mappings))
	}
	s.Mapping = s.Stack.Mappings[0]
	fn, s.Queue = s.Mapping.Function, s.Mapping.Queue
	if s.DLQ = s.Stack.Queues[s.Queue.DLQ]; s.DLQ == nil {
		return nil, nil, fmt.Errorf("system: queue %s has no dead-letter queue in the template", s.Queue.LogicalID)
	}
	if producer, err = s.Stack.FindFunctionByEnv(contract.EnvQueueURL); err != nil {
		return nil, nil, err
	}
	if s.Receipts = fn.Env[consumer.EnvTable]; s.Receipts == "" {
		return nil, nil, fmt.Errorf("system: the consumer's environment names no receipt table: %v", fn.Env)
	}
	return fn, producer, nil
}

// lambdaEnv points the Lambdas' SDK at the local endpoints — DynamoDB
// through the request counter — with dummy credentials and the stack's
// region, whatever the machine's own AWS configuration says: the suite
// never talks to a real account, with or without AWS_ENDPOINT_URL.
func (s *System) lambdaEnv(sqsURL string) map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":   s.Requests.URL(),
		"AWS_ENDPOINT_URL_SQS":        sqsURL,
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  s.Stack.Region,
		"AWS_DEFAULT_REGION":          s.Stack.Region,
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	}
}

func (s *System) startPoller(loops int) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopPoller = cancel
	s.pollerDone = make(chan struct{})
	s.Poller = &esm.Poller{
		Client:                  s.SQS,
		QueueURL:                s.Queue.URL,
		QueueARN:                s.Queue.ARN,
		Region:                  s.Stack.Region,
		BatchSize:               s.Mapping.BatchSize,
		MaxConcurrency:          loops,
		WaitTime:                time.Second,
		Invoker:                 s.Consumer,
		ReportBatchItemFailures: s.Mapping.ReportBatchItemFailures,
	}
	go func() {
		defer close(s.pollerDone)
		_ = s.Poller.Run(ctx)
	}()
}

// Close stops the poller and the Lambdas and deletes what was provisioned.
func (s *System) Close(ctx context.Context) error {
	var errs []error
	s.closeOnce.Do(func() {
		if s.stopPoller != nil {
			s.stopPoller()
			errs = append(errs, waitClosed(ctx, s.pollerDone, pollerStop, "the poller to stop"))
		}
		if s.Consumer != nil {
			s.Consumer.Stop()
		}
		if s.Producer != nil {
			s.Producer.Stop()
		}
		if s.Requests != nil {
			errs = append(errs, s.Requests.Close())
		}
		if s.Partner != nil {
			errs = append(errs, s.Partner.Close())
		}
		if s.Stack != nil {
			errs = append(errs, s.Stack.Teardown(ctx))
		}
	})
	return errors.Join(errs...)
}

// Receipt returns the consumer's record for a key.
func (s *System) Receipt(ctx context.Context, key string) (idem.Record, bool, error) {
	g, err := idem.New(s.store, s.namespace)
	if err != nil {
		return idem.Record{}, false, err
	}
	return s.store.Get(ctx, g.StorageKey(key))
}

// ProducerRecord returns the producer's record for a key (namespace
// contract.ProducerNamespace): the lease of a send under way, or its
// receipt.
func (s *System) ProducerRecord(ctx context.Context, key string) (idem.Record, bool, error) {
	g, err := idem.New(s.store, contract.ProducerNamespace)
	if err != nil {
		return idem.Record{}, false, err
	}
	return s.store.Get(ctx, g.StorageKey(key))
}

// StorageKey is the consumer's storage key of key, as its logs name it.
func (s *System) StorageKey(key string) string {
	g, err := idem.New(s.store, s.namespace)
	if err != nil {
		return ""
	}
	return g.StorageKey(key)
}

// suiteSettings is env, the consumer's as the test profile synthesized it
// in its mode, with the effect's settings as that profile sets them in
// mode: those that may not be set in mode removed, the suite's value of
// those that may and have one (contract.Setting).
func suiteSettings(env map[string]string, mode string) map[string]string {
	out := merge(env)
	for _, s := range contract.EffectSettings {
		switch {
		case !s.AllowedIn(mode):
			delete(out, s.Env)
		case s.Suite != "" && out[s.Env] == "":
			out[s.Env] = s.Suite
		}
	}
	return out
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// pollerStop bounds the wait for the poller: a long poll it has open ends
// within its wait time (1 s), and cancelling ends it sooner.
const pollerStop = 30 * time.Second

// waitClosed waits for done to be closed, for at most limit or until ctx
// ends, and says what it waited for when it gave up.
func waitClosed(ctx context.Context, done <-chan struct{}, limit time.Duration, what string) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("system: waited %s for %s", limit, what)
	case <-ctx.Done():
		return fmt.Errorf("system: waiting for %s: %w", what, ctx.Err())
	}
}
