//go:build integration

// The integration suite: the conformance suite on DynamoDB Local, the SQS
// engine's behaviour, and the real Lambdas over real SQS and DynamoDB APIs
// with duplicates, crashes and faults. `make test` runs it; with
// AWS_ENDPOINT_URL set (LocalStack) it starts no emulator and uses that.
package integration

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
)

// emulator is one lazily started, shared emulator. TestMain stops it, so
// it is stopped however the tests end (a -timeout panic skips TestMain, and
// then the emulators' parent-death signal stops them).
type emulator struct {
	once   sync.Once
	start  func(ctx context.Context, root string) (*emu.Server, error)
	server *emu.Server
	url    string
	err    error
}

var (
	dynamoDB = &emulator{start: emu.StartDynamoDB}
	sqsMQ    = &emulator{start: emu.StartSQS}
)

func (e *emulator) endpoint(tb testing.TB) string {
	tb.Helper()
	e.once.Do(func() {
		if url := os.Getenv("AWS_ENDPOINT_URL"); url != "" {
			e.url = url
			return
		}
		root, err := emu.RepoRoot()
		if err != nil {
			e.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if e.server, e.err = e.start(ctx, root); e.err == nil {
			e.url = e.server.URL()
		}
	})
	if e.err != nil {
		tb.Fatalf("emulator: %v", e.err)
	}
	return e.url
}

func (e *emulator) stop() {
	if e.server != nil {
		if err := e.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop emulator:", err)
		}
	}
}

// emulatorsOnly skips a test that is about the library or the repository,
// not the backend, when the suite runs against AWS_ENDPOINT_URL (LocalStack):
// it ran on the emulators already, and LocalStack's DynamoDB is the same
// DynamoDB Local behind one more hop.
func emulatorsOnly(t *testing.T) {
	t.Helper()
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		t.Skipf("runs on the lightweight emulators only (AWS_ENDPOINT_URL=%s)", ep)
	}
}

// dynamoEndpoint and sqsEndpoint return the shared emulators' URLs.
func dynamoEndpoint(tb testing.TB) string { return dynamoDB.endpoint(tb) }
func sqsEndpoint(tb testing.TB) string    { return sqsMQ.endpoint(tb) }

func TestMain(m *testing.M) {
	code := m.Run()
	dynamoDB.stop()
	sqsMQ.stop()
	cleanupLambdas()
	os.Exit(code)
}
