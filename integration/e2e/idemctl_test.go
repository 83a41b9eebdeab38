//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// TestIdemctlDeployed runs the operator CLI (cmd/idemctl) against the
// stack deployed into LocalStack, found by the stack's name alone: inspect,
// list, resolve both ways, redrive --dry-run and a real redrive of a DLQ
// that mixes done, not done and poison messages, stats. The redriven
// messages go through LocalStack's own event source mapping to the
// deployed consumer; the effect's probe, on the deployed tables, counts
// every application. Run it after TestDeployedStack, before the destroy.
func TestIdemctlDeployed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	d := deployed(ctx, t)
	cli := newStackCLI(ctx, t, d.stackName)
	table, ns := d.outputs[consumer.OutputTable], d.outputs[consumer.OutputNamespace]
	store, err := dynamostore.New(d.ddb, table)
	if err != nil {
		t.Fatal(err)
	}
	guard := func(s idem.Store, opts ...idem.Option) *idem.Guard {
		g, err := idem.New(s, ns, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := guard(store)
	prefix := "ctl-" + strconv.FormatInt(time.Now().Unix(), 36)
	msgs := d.messages(ctx, t, prefix+"-done", prefix+"-notdone", prefix+"-released", prefix+"-confirmed", prefix+"-poison")
	done, notdone, released, confirmed, poison := msgs[0], msgs[1], msgs[2], msgs[3], msgs[4]
	done.Body = pythonJSON(t, done.Body)

	// done: applied by the deployed consumer, its receipt written.
	if err := d.sendRaw(ctx, done); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the deployed consumer's receipt of "+done.Key, func() bool {
		rec, found, err := store.Get(ctx, g.StorageKey(done.Key))
		return err == nil && found && rec.Status == idem.StatusCompleted
	})
	// released and confirmed: unconfirmed, their receipts lost; poison:
	// failed every time it ran.
	short := guard(lostReceipts{store}, idem.WithLease(2*time.Second), idem.WithSafetyMargin(time.Second))
	for _, m := range []system.Message{released, confirmed} {
		if res, _ := short.Do(ctx, m.Key, m.Body, func(context.Context) ([]byte, error) { return nil, nil }); res.Outcome != idem.Unconfirmed {
			t.Fatalf("%s: %s, want unconfirmed", m.Key, res.Outcome)
		}
	}
	for range d.maxReceiveCount {
		g.Do(ctx, poison.Key, poison.Body, func(context.Context) ([]byte, error) {
			return nil, idem.Definite(errors.New("downstream refused (test)"))
		})
	}
	waitFor(ctx, t, "the short leases to end", func() bool {
		for _, m := range []system.Message{released, confirmed} {
			rec, _, err := store.Get(ctx, g.StorageKey(m.Key))
			if err != nil || !rec.LeaseUntil.Before(time.Now()) {
				return false
			}
		}
		return true
	})

	other, err := d.probe.Message(done.Key, 1)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for label, m := range map[string]struct{ body, key string }{
		"done": {string(done.Body), done.Key}, "reused": {string(other), done.Key},
		"notdone": {string(notdone.Body), notdone.Key}, "released": {string(released.Body), released.Key},
		"confirmed": {string(confirmed.Body), confirmed.Key}, "poison": {string(poison.Body), poison.Key},
		"malformed": {system.Malformed, ""},
	} {
		ids[label] = d.sendTo(ctx, t, d.dlqURL, m.body, m.key)
	}

	keys := []string{done.Key, notdone.Key, released.Key, confirmed.Key, poison.Key}
	// notdone has no record: inspect prints every key, then exits 1.
	cli.showExit(ctx, t, 1, append([]string{"inspect"}, keys...)...)
	var in struct {
		Keys []struct {
			Key, State  string
			DLQMessages []struct{ MessageID string }
		}
	}
	cli.jsonExit(ctx, t, 1, &in, append([]string{"inspect"}, keys...)...)
	want := map[string]string{done.Key: "completed", notdone.Key: "absent", released.Key: "unconfirmed", confirmed.Key: "unconfirmed", poison.Key: "failed"}
	for _, k := range in.Keys {
		if k.State != want[k.Key] || len(k.DLQMessages) == 0 {
			t.Errorf("inspect %s: %s with %d DLQ messages; want %s and its messages", k.Key, k.State, len(k.DLQMessages), want[k.Key])
		}
	}
	for _, status := range []string{"unconfirmed", "completed", "failed", "in-progress"} {
		cli.show(ctx, t, "list", "--status", status, "--limit", "5")
	}
	cli.show(ctx, t, "stats")

	dlqSettled(ctx, t, d, len(ids), "inspect and stats")
	dry := cli.redrive(ctx, t, "--dry-run")
	checkClasses(t, dry, ids, map[string]string{
		"done": "done", "reused": "poison", "notdone": "not-done", "released": "unconfirmed",
		"confirmed": "unconfirmed", "poison": "poison", "malformed": "malformed",
	})

	// After checking downstream: confirmed happened, released did not.
	cli.show(ctx, t, "resolve", confirmed.Key, "--done", "--yes")
	cli.show(ctx, t, "resolve", released.Key, "--not-done", "--yes")

	dlqSettled(ctx, t, d, len(ids), "the dry run")
	run := cli.redrive(ctx, t)
	checkClasses(t, run, ids, map[string]string{
		"done": "done", "reused": "poison", "notdone": "not-done", "released": "not-done",
		"confirmed": "done", "poison": "poison", "malformed": "malformed",
	})
	d.waitDrained(ctx, t, 3)
	waitFor(ctx, t, "the redriven keys applied", func() bool {
		n, err := d.probe.Applied(ctx, []string{notdone.Key, released.Key})
		return err == nil && n[notdone.Key] >= 1 && n[released.Key] >= 1
	})
	applied, err := d.probe.Applied(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("applied after the redrive: %v", applied)
	for k, n := range map[string]int{done.Key: 1, notdone.Key: 1, released.Key: 1, confirmed.Key: 0, poison.Key: 0} {
		if applied[k] != n {
			t.Errorf("%s applied %d times, want %d", k, applied[k], n)
		}
	}
	cli.show(ctx, t, "stats")
	left := cli.redrive(ctx, t, "--dry-run")
	for _, label := range []string{"reused", "poison", "malformed"} {
		if !hasMessage(left, ids[label]) {
			t.Errorf("the %s message left the DLQ", label)
		}
	}
	for _, label := range []string{"done", "notdone", "released", "confirmed"} {
		if hasMessage(left, ids[label]) {
			t.Errorf("the %s message is still in the DLQ", label)
		}
	}
}

// pythonJSON writes a JSON document as LocalStack's SQS event source
// mapping hands a body to Lambda: it decodes JSON bodies for its filters
// and encodes them again with Python's json.dumps (", " and ": "), see
// localstack/services/lambda_/event_source_mapping/pollers/sqs_poller.py
// (4.14). The deployed consumer fingerprints that form, while the DLQ
// keeps the body as sent; on AWS both are the body as sent. A body already
// in that form passes through unchanged, so the done message's receipt and
// its copy in the DLQ have the same fingerprint, as on AWS. (ASCII only:
// json.dumps would escape the rest.)
func pythonJSON(t *testing.T, doc []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type frame struct {
		object bool
		n      int // keys and values written so far
	}
	var (
		out   bytes.Buffer
		stack []frame
	)
	sep := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		switch {
		case top.object && top.n%2 == 1:
			out.WriteString(": ")
		case top.n > 0:
			out.WriteString(", ")
		}
		top.n++
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out.Bytes()
		}
		if err != nil {
			t.Fatalf("pythonJSON: %v", err)
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				sep()
				stack = append(stack, frame{object: v == '{'})
			} else {
				stack = stack[:len(stack)-1]
			}
			out.WriteString(v.String())
		default:
			sep()
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
		}
	}
}

// lostReceipts is a store whose receipts never land: the Guard's outcome
// is Unconfirmed and the record stays in progress.
type lostReceipts struct{ idem.Store }

func (lostReceipts) Complete(context.Context, string, string, idem.Completion) error {
	return errors.New("receipt store unreachable (test)")
}

func (d *deployment) sendTo(ctx context.Context, t *testing.T, url, body, key string) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	if key != "" {
		in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{d.key: {DataType: aws.String("String"), StringValue: aws.String(key)}}
	}
	out, err := d.sqs.SendMessage(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

// dlqSettled waits until the n messages of the DLQ that the commands of
// what read and showed again are visible: redrive reads until a receive
// is empty, and an endpoint may take a while to show a message again
// (LocalStack under load took seconds: the next redrive read none).
func dlqSettled(ctx context.Context, t *testing.T, d *deployment, n int, what string) {
	t.Helper()
	waitFor(ctx, t, "the DLQ's messages to be visible again after "+what, func() bool {
		visible, inFlight, err := system.QueueDepth(ctx, d.sqs, d.dlqURL)
		return err == nil && visible >= n && inFlight == 0
	})
}

func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// stackCLI runs the built CLI with --stack against AWS_ENDPOINT_URL.
type stackCLI struct{ bin, stack string }

func newStackCLI(ctx context.Context, t *testing.T, stack string) stackCLI {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idemctl")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/idemctl")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/idemctl: %v\n%s", err, out)
	}
	return stackCLI{bin: bin, stack: stack}
}

func (c stackCLI) run(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	return c.runExit(ctx, t, 0, args...)
}

// runExit runs a command that must exit with code (inspect of a key
// without a record: 1, after printing every key).
func (c stackCLI) runExit(ctx context.Context, t *testing.T, code int, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "--stack", c.stack)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("idemctl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	if got := cmd.ProcessState.ExitCode(); got != code {
		t.Fatalf("idemctl %s: exit %d, want %d: %s", strings.Join(args, " "), got, code, errOut.String())
	}
	return out.String()
}

func (c stackCLI) show(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	c.showExit(ctx, t, 0, args...)
}

func (c stackCLI) showExit(ctx context.Context, t *testing.T, code int, args ...string) {
	t.Helper()
	t.Logf("$ idemctl %s --stack %s\n%s", strings.Join(args, " "), c.stack, c.runExit(ctx, t, code, args...))
}

func (c stackCLI) json(ctx context.Context, t *testing.T, v any, args ...string) {
	t.Helper()
	c.jsonExit(ctx, t, 0, v, args...)
}

func (c stackCLI) jsonExit(ctx context.Context, t *testing.T, code int, v any, args ...string) {
	t.Helper()
	out := c.runExit(ctx, t, code, append(args, "--output", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("idemctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

type redriveRun struct {
	Messages []struct{ MessageID, StorageKey, Class, Action string }
	Counts   map[string]int
}

// redrive runs a redrive and logs its JSON; a dry run is shown as a
// table first.
func (c stackCLI) redrive(ctx context.Context, t *testing.T, args ...string) redriveRun {
	t.Helper()
	args = append([]string{"redrive"}, args...)
	if len(args) > 1 {
		c.show(ctx, t, args...)
	}
	out := c.run(ctx, t, append(args, "--output", "json")...)
	t.Logf("$ idemctl %s --stack %s --output json\n%s", strings.Join(args, " "), c.stack, out)
	var r redriveRun
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("idemctl redrive: %v", err)
	}
	return r
}

// hasMessage reports whether id is in the DLQ r read, other than as a copy
// a redrive deletes as done: a loaded LocalStack can take a SendMessage
// whose reply it lost twice, and redrive sends one copy of a key back per
// run (the other is "copy", then "done" once the key is processed).
func hasMessage(r redriveRun, id string) bool {
	for _, m := range r.Messages {
		if m.MessageID == id && m.Class != "done" {
			return true
		}
	}
	return false
}

// checkClasses checks the class redrive gave each label's message. A
// second copy of a key in the DLQ (a SendMessage LocalStack took twice) is
// "copy" while its twin gets the class: either is the label's.
func checkClasses(t *testing.T, r redriveRun, ids, want map[string]string) {
	t.Helper()
	got, key := map[string]string{}, map[string]string{}
	for _, m := range r.Messages {
		got[m.MessageID], key[m.MessageID] = m.Class, m.StorageKey
	}
	for label, class := range want {
		id := ids[label]
		if got[id] == class {
			continue
		}
		twin := false
		for _, m := range r.Messages {
			twin = twin || (got[id] == "copy" && m.MessageID != id && m.StorageKey == key[id] && m.Class == class)
		}
		if !twin {
			t.Errorf("DLQ message %s: class %q, want %q", label, got[id], class)
		}
	}
}
