//go:build integration

package integration

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

var lambdaBuild struct {
	once               sync.Once
	dir                string
	consumer, producer string
	template           string
	err                error
}

// lambdas builds the consumer and producer for this machine once per run
// and finds the test profile's template.
func lambdas(t *testing.T) (consumer, producer, template string) {
	t.Helper()
	b := &lambdaBuild
	b.once.Do(func() {
		root, err := emu.RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		if b.template, b.err = system.FindTemplate(root); b.err != nil {
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "sqsidem-lambdas-"); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		b.consumer, b.producer, b.err = system.BuildLambdas(ctx, root, b.dir)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.consumer, b.producer, b.template
}

func cleanupLambdas() {
	for _, dir := range []string{lambdaBuild.dir, idemctlBuild.dir} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// perProcess is how many invocations every consumer process the suite
// starts runs at once (AWS_LAMBDA_MAX_CONCURRENCY, the shape of a Lambda
// Managed Instances execution environment): `go test -tags integration
// ./integration/ -per-process 8`. make test runs the suite on the emulators
// with 1 and on LocalStack with 8.
var perProcess = flag.Int("per-process", 1, "invocations one consumer process runs at once (AWS_LAMBDA_MAX_CONCURRENCY, as on Lambda Managed Instances)")

// processes is how many consumer processes run n invocations at once:
// n with one invocation per process, fewer with -per-process, so that a
// scenario about n instances puts them in one process where it can.
func processes(n int) int { return max(1, (n+*perProcess-1) / *perProcess) }

// startSystem provisions a private copy of the stack for one test and
// starts its Lambdas; the Lambdas' output goes to .cache/logs/integration
// and its tail is shown when the test fails. A test that asks for a mode
// the effect does not implement is skipped.
func startSystem(t *testing.T, cfg system.Config) *system.System {
	t.Helper()
	cfg.ConsumerBinary, cfg.ProducerBinary, cfg.Template = lambdas(t)
	cfg.DynamoURL, cfg.SQSURL = dynamoEndpoint(t), sqsEndpoint(t)
	if cfg.PerProcess == 0 {
		cfg.PerProcess = *perProcess
	}
	root, _ := emu.RepoRoot()
	logPath := filepath.Join(root, ".cache", "logs", "integration", strings.ReplaceAll(t.Name(), "/", "_")+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = logFile
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := system.Start(ctx, cfg)
	if errors.Is(err, system.ErrMode) {
		logFile.Close()
		t.Skipf("the scenario needs %s mode: %v", cfg.Mode, err)
	}
	if err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close system: %v", err)
		}
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("Lambda log %s, last lines:\n%s", logPath, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return s
}

// drain waits for the queue to empty: every message deleted or in the DLQ.
func drain(t *testing.T, s *system.System, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := s.WaitIdle(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// check accounts for every message sent, and for the messages (by id)
// that can only end in the DLQ; it fails the test if any vanished or sits
// in the DLQ without a reason, or if a key was applied more often than
// the consumer's guarantee allows (system.Report.Broken: the promise the
// consumer logged at init, not the template's), and logs the counts.
func check(t *testing.T, s *system.System, sent []system.Message, deadIDs ...string) system.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := s.Check(ctx, sent, deadIDs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: keys %d, deliveries %d, applied %d, duplicates suppressed %d, in progress %d, in DLQ %d, double effects %d (%v: reruns %v, run again without a receipt %v); outcomes %v; DynamoDB requests %v",
		s.Promise, r.Keys, r.Deliveries, r.Applied, r.Outcomes["duplicate"], r.Outcomes["in_progress"], len(r.DeadLetters), r.DoubleEffects, r.Doubled, r.Reruns, r.Retaken, r.Outcomes, r.DynamoRequests)
	for _, d := range r.DeadLetters {
		t.Logf("DLQ: key %q after %d receives: %s", d.Key, d.Receives, d.Reason)
	}
	if err := r.Lost(); err != nil {
		t.Fatal(err)
	}
	if err := r.Broken(); err != nil {
		t.Fatal(err)
	}
	return r
}

// messages seeds and returns the probe's messages for n keys prefix-….
func messages(t *testing.T, ctx context.Context, s *system.System, prefix string, n int) []system.Message {
	t.Helper()
	msgs, err := s.Messages(ctx, system.Keys(prefix, n)...)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}
