//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestIdemctl runs the operator CLI (cmd/idemctl), built and started as a
// process, against DynamoDB Local and ElasticMQ. Records are made by a
// real Guard — completed, failed, failed every time (poison), in progress,
// unconfirmed (in progress, lease ended: the receipt could not be
// written), expired — and the DLQ holds a message of each, plus a
// malformed one, a second copy, and a key reused with another payload.
// Then inspect, list, stats, redrive --dry-run, resolve both ways and one
// refused because the record changed in between, a real redrive, the
// moved messages consumed by a real sqsbatch handler over a Guard, a
// second redrive, and bad input. The effect is counted per key: every key
// must end applied exactly once (the poison one never), the done ones
// never again.
//
// On LocalStack the CLI is tested against the deployed stack instead
// (integration/e2e/idemctl_test.go): there, a receive whose reply the
// loaded LocalStack dropped and the SDK retried hides its messages for the
// walk's 30 s hold, and this test, which checks exact queue depths after
// each step, cannot tell that from a wrong answer (CI16, CI17).
func TestIdemctl(t *testing.T) {
	emulatorsOnly(t)
	ctx := ctxFor(t, 6*time.Minute)
	ddbURL, sqsURL := dynamoEndpoint(t), sqsEndpoint(t)
	ddb, mq, err := emu.Clients(ctx, ddbURL, sqsURL)
	if err != nil {
		t.Fatal(err)
	}
	w := newCLIWorld(ctx, t, ddb, mq, ddbURL, sqsURL)
	w.seed(ctx, t)
	all := []string{"done-1", "done-2", "notdone-1", "failed-1", "poison-1", "inprog-1", "unconf-1", "unconf-2", "unconf-3", "expired-1"}
	before := w.snapshot(ctx, t)

	// inspect: every state, and each key's messages in the DLQ.
	// notdone-1 has no record: inspect prints every key, then exits 1.
	w.showExit(ctx, t, 1, "inspect", "done-1", "unconf-1", "poison-1", "notdone-1")
	var in struct {
		DLQ struct {
			Checked, Complete bool
			MessagesRead      int
		}
		Keys []struct {
			Key, StorageKey, State string
			Attempts               int
			DLQMessages            []struct{ MessageID string }
		}
	}
	w.jsonExit(ctx, t, 1, &in, append([]string{"inspect"}, all...)...)
	wantStates := map[string]string{
		"done-1": "completed", "done-2": "completed", "notdone-1": "absent", "failed-1": "failed", "poison-1": "failed",
		"inprog-1": "in-progress", "unconf-1": "unconfirmed", "unconf-2": "unconfirmed", "unconf-3": "unconfirmed", "expired-1": "expired",
	}
	wantInDLQ := map[string]int{"done-1": 2, "done-2": 1, "notdone-1": 2, "failed-1": 1, "poison-1": 1, "inprog-1": 1, "unconf-1": 1, "unconf-2": 1, "unconf-3": 1, "expired-1": 1}
	if !in.DLQ.Checked || !in.DLQ.Complete || in.DLQ.MessagesRead != 13 {
		t.Fatalf("inspect read the DLQ as %+v; want all 13 messages", in.DLQ)
	}
	for _, k := range in.Keys {
		if k.State != wantStates[k.Key] || len(k.DLQMessages) != wantInDLQ[k.Key] || k.StorageKey != w.guard.StorageKey(k.Key) {
			t.Errorf("inspect %s: state %s, %d DLQ message(s), storage key %s; want %s, %d, %s",
				k.Key, k.State, len(k.DLQMessages), k.StorageKey, wantStates[k.Key], wantInDLQ[k.Key], w.guard.StorageKey(k.Key))
		}
	}
	w.show(ctx, t, "inspect", "--storage-key", w.guard.StorageKey("inprog-1"))
	w.expectDepth(ctx, t, 13, 0)

	// list: each state.
	w.show(ctx, t, "list", "--status", "unconfirmed")
	for status, want := range map[string]int{"completed": 2, "in-progress": 1, "unconfirmed": 3, "failed": 2, "expired": 1, "all": 9} {
		var l struct {
			Matched int
			Records []struct{ StorageKey, State string }
		}
		w.json(ctx, t, &l, "list", "--status", status)
		if l.Matched != want || len(l.Records) != want {
			t.Errorf("list --status %s: %d matched, %d listed; want %d", status, l.Matched, len(l.Records), want)
		}
		for _, r := range l.Records {
			if status != "all" && r.State != status {
				t.Errorf("list --status %s listed a record in state %s", status, r.State)
			}
		}
	}
	var old struct{ Matched int }
	if w.json(ctx, t, &old, "list", "--status", "unconfirmed", "--older-than", "1h"); old.Matched != 0 {
		t.Errorf("list --older-than 1h: %d records; want none", old.Matched)
	}

	// stats, then redrive --dry-run: sorted, nothing changed.
	w.show(ctx, t, "stats")
	w.checkStats(ctx, t, map[string]int{"completed": 2, "in-progress": 1, "unconfirmed": 3, "failed": 2, "unknown": 0, "held": 0, "expired": 1, "total": 9}, 13)
	w.show(ctx, t, "redrive", "--dry-run")
	dry := w.redrive(ctx, t, "--dry-run")
	w.checkSort(t, dry, map[string]string{
		"doneA": "done", "doneB": "done", "other": "poison", "failed": "not-done", "poison": "poison",
		"malformed": "malformed", "inprog": "in-progress", "unconf1": "unconfirmed", "unconf2": "unconfirmed",
		"unconf3": "unconfirmed", "expired": "done",
	})
	if after := w.snapshot(ctx, t); !reflect.DeepEqual(before, after) {
		t.Fatal("redrive --dry-run changed the table")
	}
	w.expectDepth(ctx, t, 13, 0)

	// resolve: after "checking downstream" (the effect counter), unconf-1
	// happened, unconf-2 did not; unconf-3's late receipt lands while the
	// operator is asked, and the release is refused.
	w.show(ctx, t, "resolve", "unconf-1", "--done", "--yes")
	var rv struct {
		Written bool
		After   struct{ State, LastError string }
	}
	w.json(ctx, t, &rv, "resolve", "unconf-2", "--not-done", "--yes")
	if !rv.Written || rv.After.State != "failed" || rv.After.LastError == "" {
		t.Fatalf("resolve unconf-2 --not-done: %+v", rv)
	}
	if rec := w.record(ctx, t, "unconf-1"); rec.Status != idem.StatusCompleted {
		t.Fatalf("resolve unconf-1 --done left %s", rec.Status)
	}
	t.Run("ResolveRefusedWhenTheRecordChanged", func(t *testing.T) { w.resolveRace(ctx, t) })
	for _, bad := range [][]string{
		{"resolve", "done-1", "--not-done", "--yes"}, // a receipt is never released
		{"resolve", "inprog-1", "--done", "--yes"},   // a live lease
		{"resolve", "notdone-1", "--done", "--yes"},  // no record
		{"resolve", "expired-1", "--done", "--yes"},  // counts as absent
	} {
		w.fails(ctx, t, 1, bad...)
	}

	// redrive: done deleted, not done sent back, the rest left.
	w.show(ctx, t, "redrive")
	w.expectDepth(ctx, t, 5, 3)
	applied := w.consume(ctx, t)
	t.Logf("consumer over the redriven messages: outcomes %v", applied)
	w.show(ctx, t, "redrive")
	w.expectDepth(ctx, t, 4, 0)
	w.show(ctx, t, "stats")

	// The ledger: each key's effect once, the poison one never.
	effects := w.effectCounts()
	t.Logf("effects per key: %v", effects)
	for _, k := range all {
		if want := map[bool]int{true: 0, false: 1}[k == "poison-1"]; effects[k] != want {
			t.Errorf("key %s: effect ran %d times, want %d", k, effects[k], want)
		}
	}

	t.Run("BadInput", func(t *testing.T) { w.badInput(ctx, t) })
}

// cliWorld is the test's receipt table, queues and CLI.
type cliWorld struct {
	bin, table, ns, queueURL, dlqURL, queueARN string
	env, flags                                 []string
	ddb                                        *dynamodb.Client
	mq                                         *sqs.Client
	store                                      *dynamostore.Store
	guard                                      *idem.Guard
	mu                                         sync.Mutex
	effects                                    map[string]int
	ids                                        map[string]string // DLQ message label → id
}

const cliMaxReceive = 3

func newCLIWorld(ctx context.Context, t *testing.T, ddb *dynamodb.Client, mq *sqs.Client, ddbURL, sqsURL string) *cliWorld {
	t.Helper()
	w := &cliWorld{ddb: ddb, mq: mq, ns: "orders", effects: map[string]int{}, ids: map[string]string{}}
	w.bin = buildIdemctl(ctx, t)
	// TTL stays off: DynamoDB Local deletes an expired item within
	// seconds, DynamoDB within about two days, and the expired receipt
	// must stay readable for the test to see what redrive makes of it.
	w.table = uniqueName("receipts")
	createTable(ctx, t, ddb, w.table, dynamostore.DefaultSchema.PartitionKey)
	w.queueURL, w.dlqURL, w.queueARN = createQueuePair(ctx, t, mq, uniqueName("idemctl"), cliMaxReceive)
	var err error
	if w.store, err = dynamostore.New(ddb, w.table); err != nil {
		t.Fatal(err)
	}
	if w.guard, err = idem.New(w.store, w.ns); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	w.env = cliEnv(home, "us-east-1", ddbURL, sqsURL)
	w.flags = []string{"--table", w.table, "--namespace", w.ns, "--queue-url", w.queueURL, "--dlq-url", w.dlqURL, "--key-field", "orderId"}
	return w
}

// cliEnv is idemctl's environment against the emulators at ddbURL and
// sqsURL, with home as its HOME and nothing of the machine's AWS
// configuration.
func cliEnv(home, region, ddbURL, sqsURL string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=" + region,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddbURL, "AWS_ENDPOINT_URL_SQS=" + sqsURL,
		// The emulators have no CloudWatch: a closed port, so stats falls
		// back at once to reading the DLQ.
		"AWS_ENDPOINT_URL_CLOUDWATCH=http://127.0.0.1:1", "AWS_ENDPOINT_URL_CLOUDFORMATION=http://127.0.0.1:1",
	}
}

// buildIdemctl builds the CLI into a temporary directory.
func buildIdemctl(ctx context.Context, t *testing.T) string {
	t.Helper()
	root, err := emu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "idemctl")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/idemctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/idemctl: %v\n%s", err, out)
	}
	return bin
}

// createQueuePair creates a queue whose redrive policy sends a message to
// a DLQ after maxReceive receives.
func createQueuePair(ctx context.Context, t *testing.T, mq *sqs.Client, name string, maxReceive int) (queueURL, dlqURL, queueARN string) {
	t.Helper()
	dlq, err := mq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	dlqARN := queueAttr(ctx, t, mq, aws.ToString(dlq.QueueUrl), sqstypes.QueueAttributeNameQueueArn)
	policy, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(maxReceive)})
	q, err := mq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"RedrivePolicy": string(policy), "VisibilityTimeout": "30"}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(q.QueueUrl), aws.ToString(dlq.QueueUrl), queueAttr(ctx, t, mq, aws.ToString(q.QueueUrl), sqstypes.QueueAttributeNameQueueArn)
}

func queueAttr(ctx context.Context, t *testing.T, mq *sqs.Client, url string, name sqstypes.QueueAttributeName) string {
	t.Helper()
	out, err := mq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{name}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes[string(name)]
}

// receiptLost is a store whose receipts never land: the Guard's effect
// runs and its outcome is Unconfirmed, as when the store stays
// unreachable past the lease.
type receiptLost struct{ idem.Store }

func (receiptLost) Complete(context.Context, string, string, idem.Completion) error {
	return errors.New("receipt store unreachable (test)")
}

var errDownstream = errors.New("downstream refused (test)")

func (w *cliWorld) applied(key string) idem.Func {
	return func(context.Context) ([]byte, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.effects[key]++
		return nil, nil
	}
}

func failing(context.Context) ([]byte, error) { return nil, idem.Definite(errDownstream) }

func (w *cliWorld) effectCounts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.effects {
		out[k] = v
	}
	return out
}

func body(key string, variant int) string {
	return fmt.Sprintf(`{"orderId":%q,"amount":%d}`, key, 10+variant)
}

// seed makes the records with real Guards and fills the DLQ.
func (w *cliWorld) seed(ctx context.Context, t *testing.T) {
	t.Helper()
	guard := func(s idem.Store, opts ...idem.Option) *idem.Guard {
		g, err := idem.New(s, w.ns, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	do := func(g *idem.Guard, key string, fn idem.Func, want idem.Outcome) {
		if res, _ := g.Do(ctx, key, []byte(body(key, 0)), fn); res.Outcome != want {
			t.Fatalf("seed %s: outcome %s, want %s", key, res.Outcome, want)
		}
	}
	do(w.guard, "done-1", w.applied("done-1"), idem.Executed)
	do(w.guard, "done-2", w.applied("done-2"), idem.Executed)
	do(w.guard, "failed-1", failing, idem.Failed)
	for range cliMaxReceive {
		do(w.guard, "poison-1", failing, idem.Failed)
	}
	do(guard(receiptLost{w.store}, idem.WithLease(10*time.Minute)), "inprog-1", w.applied("inprog-1"), idem.Unconfirmed)
	short := guard(receiptLost{w.store}, idem.WithLease(2*time.Second), idem.WithSafetyMargin(time.Second))
	do(short, "unconf-1", w.applied("unconf-1"), idem.Unconfirmed)
	// unconf-2's process died before the effect: the lease was taken, the
	// effect never ran.
	do(short, "unconf-2", func(context.Context) ([]byte, error) { return nil, nil }, idem.Unconfirmed)
	do(short, "unconf-3", w.applied("unconf-3"), idem.Unconfirmed)
	expiring := guard(w.store, idem.WithLease(2*time.Second), idem.WithSafetyMargin(time.Second), idem.WithRetention(time.Second))
	do(expiring, "expired-1", w.applied("expired-1"), idem.Executed)
	// Wait for the short leases to end and the short receipt to expire.
	for deadline := time.Now().Add(30 * time.Second); ; {
		exp, unc := w.record(ctx, t, "expired-1"), w.record(ctx, t, "unconf-3")
		if time.Now().Unix() > exp.ExpiresAt.Unix() && time.Now().After(unc.LeaseUntil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the short leases and retention did not end within 30s: %+v %+v", exp, unc)
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, m := range []struct{ label, key, body string }{
		{"doneA", "done-1", body("done-1", 0)}, {"doneB", "done-1", body("done-1", 0)},
		{"other", "", body("done-2", 1)},
		{"notdoneA", "notdone-1", body("notdone-1", 0)}, {"notdoneB", "", body("notdone-1", 0)},
		{"failed", "", body("failed-1", 0)}, {"poison", "", body("poison-1", 0)},
		{"malformed", "", "<order>not json</order>"},
		{"inprog", "", body("inprog-1", 0)}, {"unconf1", "", body("unconf-1", 0)},
		{"unconf2", "", body("unconf-2", 0)}, {"unconf3", "", body("unconf-3", 0)},
		{"expired", "", body("expired-1", 0)},
	} {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(w.dlqURL), MessageBody: aws.String(m.body)}
		if m.key != "" { // some by the key attribute, the rest by the body's field
			in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{"orderId": {DataType: aws.String("String"), StringValue: aws.String(m.key)}}
		}
		out, err := w.mq.SendMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		w.ids[m.label] = aws.ToString(out.MessageId)
	}
}

func (w *cliWorld) record(ctx context.Context, t *testing.T, key string) idem.Record {
	t.Helper()
	rec, _, err := w.store.Get(ctx, w.guard.StorageKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// cliResult is one run of the CLI.
type cliResult struct {
	code           int
	stdout, stderr string
}

// run runs `idemctl CMD <the world's flags> ARGS...`.
func (w *cliWorld) run(ctx context.Context, t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	full := append(append([]string{args[0]}, w.flags...), args[1:]...)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, full...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("idemctl %s: %v", strings.Join(args, " "), err)
	}
	return cliResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
}

// show runs a command that must succeed and logs its table, the sample
// output of the runbook.
func (w *cliWorld) show(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	w.showExit(ctx, t, 0, args...)
}

// showExit is show of a command that must exit with code (inspect of a key
// without a record: 1, after printing every key).
func (w *cliWorld) showExit(ctx context.Context, t *testing.T, code int, args ...string) {
	t.Helper()
	r := w.run(ctx, t, w.env, args...)
	if r.code != code {
		t.Fatalf("idemctl %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	t.Logf("$ idemctl %s\n%s", strings.Join(args, " "), r.stdout)
}

// json runs a command with --output json that must succeed into v.
func (w *cliWorld) json(ctx context.Context, t *testing.T, v any, args ...string) {
	t.Helper()
	w.jsonExit(ctx, t, 0, v, args...)
}

// jsonExit is json of a command that must exit with code.
func (w *cliWorld) jsonExit(ctx context.Context, t *testing.T, code int, v any, args ...string) {
	t.Helper()
	r := w.run(ctx, t, w.env, append(args, "--output", "json")...)
	if r.code != code {
		t.Fatalf("idemctl %s: exit %d, want %d: %s", strings.Join(args, " "), r.code, code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("idemctl %s: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

// fails runs a command that must fail with code, one line on stderr.
func (w *cliWorld) fails(ctx context.Context, t *testing.T, code int, args ...string) cliResult {
	t.Helper()
	return w.failsWith(ctx, t, w.env, code, args...)
}

func (w *cliWorld) failsWith(ctx context.Context, t *testing.T, env []string, code int, args ...string) cliResult {
	t.Helper()
	r := w.run(ctx, t, env, args...)
	if r.code != code || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "idemctl: ") {
		t.Errorf("idemctl %s: exit %d, stderr %q; want exit %d and one line", strings.Join(args, " "), r.code, r.stderr, code)
	}
	t.Logf("$ idemctl %s → exit %d: %s", strings.Join(args, " "), r.code, strings.TrimSpace(r.stderr))
	return r
}

type redriveOut struct {
	Complete bool
	Messages []struct{ MessageID, Class, Action, Reason string }
	Counts   map[string]int
}

func (w *cliWorld) redrive(ctx context.Context, t *testing.T, args ...string) redriveOut {
	t.Helper()
	var out redriveOut
	w.json(ctx, t, &out, append([]string{"redrive"}, args...)...)
	return out
}

// checkSort checks the class of each labelled message; of the two copies
// of notdone-1 the first read goes back and the other waits.
func (w *cliWorld) checkSort(t *testing.T, out redriveOut, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, m := range out.Messages {
		got[m.MessageID] = m.Class
	}
	if len(got) != 13 || !out.Complete {
		t.Fatalf("redrive read %d messages (complete %v), want all 13", len(got), out.Complete)
	}
	for label, class := range want {
		if got[w.ids[label]] != class {
			t.Errorf("message %s: class %q, want %q", label, got[w.ids[label]], class)
		}
	}
	pair := []string{got[w.ids["notdoneA"]], got[w.ids["notdoneB"]]}
	if !(pair[0] == "not-done" && pair[1] == "copy") && !(pair[0] == "copy" && pair[1] == "not-done") {
		t.Errorf("the two copies of notdone-1: %v, want one not-done and one copy", pair)
	}
}

func (w *cliWorld) checkStats(ctx context.Context, t *testing.T, records map[string]int, dlq int) {
	t.Helper()
	var s struct {
		Records map[string]int
		DLQ     struct {
			Visible          int
			OldestAgeSeconds *int64
			OldestSource     string
		}
		Queue struct{ OldestSource string }
	}
	w.json(ctx, t, &s, "stats")
	if !reflect.DeepEqual(s.Records, records) || s.DLQ.Visible != dlq || s.DLQ.OldestSource != "peek" || s.DLQ.OldestAgeSeconds == nil || s.Queue.OldestSource != "none" {
		t.Errorf("stats: %+v; want records %v, DLQ %d visible with its age peeked", s, records, dlq)
	}
}

func (w *cliWorld) expectDepth(ctx context.Context, t *testing.T, dlq, queue int) {
	t.Helper()
	for name, c := range map[string]struct {
		url  string
		want int
	}{"DLQ": {w.dlqURL, dlq}, "queue": {w.queueURL, queue}} {
		visible, _ := strconv.Atoi(queueAttr(ctx, t, w.mq, c.url, sqstypes.QueueAttributeNameApproximateNumberOfMessages))
		hidden, _ := strconv.Atoi(queueAttr(ctx, t, w.mq, c.url, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible))
		if visible != c.want || hidden != 0 {
			t.Fatalf("%s: %d visible, %d in flight; want %d visible, none in flight", name, visible, hidden, c.want)
		}
	}
}

// snapshot is every item of the receipt table.
func (w *cliWorld) snapshot(ctx context.Context, t *testing.T) map[string]map[string]types.AttributeValue {
	t.Helper()
	out, err := w.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	items := map[string]map[string]types.AttributeValue{}
	for _, it := range out.Items {
		items[it["pk"].(*types.AttributeValueMemberS).Value] = it
	}
	return items
}

// resolveRace: the operator is asked (on a terminal) to release unconf-3;
// meanwhile the attempt that held it writes its late receipt, with the
// token resolve read. A release fenced by the token alone would turn that
// receipt into FAILED and let a copy run the effect again; resolve's
// write is fenced by the whole record and is refused.
func (w *cliWorld) resolveRace(ctx context.Context, t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to run the CLI on a terminal")
	}
	rec := w.record(ctx, t, "unconf-3")
	args := append([]string{w.bin, "resolve"}, w.flags...)
	args = append(args, "unconf-3", "--not-done")
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, script, "-qefc", strings.Join(quoted, " "), "/dev/null")
	cmd.Env = w.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "[y/N]") {
		select {
		case <-cctx.Done():
			t.Fatalf("no confirmation prompt within a minute: %q", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	late := idem.Completion{ExpiresAt: rec.ExpiresAt, Now: time.Now()}
	if err := w.store.Complete(ctx, w.guard.StorageKey("unconf-3"), rec.Lease, late); err != nil {
		t.Fatalf("the late receipt: %v", err)
	}
	if _, err := io.WriteString(stdin, "y\n"); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	t.Logf("$ idemctl resolve unconf-3 --not-done (on a terminal; the late receipt lands before the answer)\n%s", out.String())
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out.String(), "changed") {
		t.Fatalf("resolve over a changed record: %v; want exit 1, refused as changed", err)
	}
	if now := w.record(ctx, t, "unconf-3"); now.Status != idem.StatusCompleted || now.Lease != rec.Lease {
		t.Fatalf("unconf-3 after the refused resolve: %s with lease %s; want the late receipt untouched", now.Status, now.Lease)
	}
}

// lockedBuffer is a bytes.Buffer the process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// consume runs the queue's messages through a real sqsbatch handler over
// a Guard, as the consumer's Lambda would, until the queue is empty, and
// returns the outcomes.
func (w *cliWorld) consume(ctx context.Context, t *testing.T) map[string]int {
	t.Helper()
	g, err := idem.New(w.store, w.ns, idem.WithLease(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	outcomes := map[string]int{}
	h, err := sqsbatch.New(g, consumer.KeyField("orderId"),
		func(ctx context.Context, key string, _ events.SQSMessage) ([]byte, error) { return w.applied(key)(ctx) },
		sqsbatch.WithLogger(slog.New(slog.DiscardHandler)),
		sqsbatch.WithRecordHook(func(_ context.Context, r sqsbatch.RecordResult) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[r.Outcome.String()]++
		}))
	if err != nil {
		t.Fatal(err)
	}
	for {
		out, err := w.mq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return outcomes
		}
		ev := events.SQSEvent{}
		for _, m := range out.Messages {
			rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: m.Attributes, EventSourceARN: w.queueARN, MessageAttributes: map[string]events.SQSMessageAttribute{}}
			for k, v := range m.MessageAttributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
			}
			ev.Records = append(ev.Records, rec)
		}
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, r := range ev.Records {
			if failed[r.MessageId] {
				t.Fatalf("a redriven message failed in the consumer: %s", r.MessageId)
			}
			if _, err := w.mq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.queueURL), ReceiptHandle: aws.String(r.ReceiptHandle)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// badInput: each gets one line on stderr and its exit code, and changes
// neither the table nor the queues.
func (w *cliWorld) badInput(ctx context.Context, t *testing.T) {
	before := w.snapshot(ctx, t)
	notReceipts := uniqueName("orders")
	createTable(ctx, t, w.ddb, notReceipts, "id")
	foreign := uniqueName("foreign")
	createTable(ctx, t, w.ddb, foreign, "pk")
	if _, err := w.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(foreign), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "customer-7"}, "name": &types.AttributeValueMemberS{Value: "x"},
	}}); err != nil {
		t.Fatal(err)
	}
	missingQueue := w.dlqURL[:strings.LastIndex(w.dlqURL, "/")+1] + "no-such-queue"
	home := t.TempDir()
	noCredentials := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none")}

	for _, c := range []struct {
		code int
		want string
		args []string
	}{
		{1, "does not exist", []string{"inspect", "k", "--table", uniqueName("missing")}},
		{1, "not a receipt table", []string{"inspect", "k", "--table", notReceipts}},
		{1, "not an idem record", []string{"list", "--table", foreign}},
		{1, "no such queue", []string{"inspect", "done-1", "--dlq-url", missingQueue}},
		{1, "not the dead-letter queue", []string{"redrive", "--dlq-url", w.queueURL}},
		{1, "no record", []string{"resolve", "nobody", "--done", "--yes"}},
		{1, "refused", []string{"resolve", "done-1", "--not-done", "--yes"}},
		{2, "--done or --not-done", []string{"resolve", "done-1"}},
		{2, "nobody can confirm", []string{"resolve", "poison-1", "--done"}},
		{2, "is not a queue URL", []string{"redrive", "--dlq-url", "not-a-url"}},
		{2, "unknown command", []string{"drain"}},
	} {
		r := w.fails(ctx, t, c.code, c.args...)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("idemctl %s: %q does not say %q", strings.Join(c.args, " "), r.stderr, c.want)
		}
	}
	if r := w.failsWith(ctx, t, noCredentials, 1, "stats"); !strings.Contains(r.stderr, "no AWS credentials") {
		t.Errorf("without credentials: %q", r.stderr)
	}
	if after := w.snapshot(ctx, t); !reflect.DeepEqual(before, after) {
		t.Error("bad input changed the receipt table")
	}
	w.expectDepth(ctx, t, 4, 0)
}
