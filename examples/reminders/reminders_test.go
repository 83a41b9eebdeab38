package reminders_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"

	"example.com/reminders"
)

const (
	tokenARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:reminders/sms-token-AbCdEf"
	token    = "sk_test_3f9a"
)

// provider is an SMS provider as the effect expects one: POST /messages
// with a bearer token and an Idempotency-Key, GET /messages/<key>. It does
// not deduplicate, so that a second SMS of a reminder shows.
type provider struct {
	*httptest.Server
	mu      sync.Mutex
	sent    map[string]int // by Idempotency-Key
	posts   int
	lookups int
	tokens  []string // every request's Authorization
	answer  int      // with status != 0: every POST answers it, sending nothing
	lose    bool     // every POST sends, then the reply is lost
}

func newProvider(t *testing.T) *provider {
	p := &provider{sent: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /messages", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		p.posts++
		p.tokens = append(p.tokens, r.Header.Get("Authorization"))
		answer, lose := p.answer, p.lose
		if answer == 0 {
			p.sent[key]++
		}
		p.mu.Unlock()
		switch {
		case answer != 0:
			w.WriteHeader(answer)
		case lose:
			panic(http.ErrAbortHandler) // the connection closes unanswered
		default:
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]string{"id": "sms_" + key})
		}
	})
	mux.HandleFunc("GET /messages/{key}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.lookups++
		p.tokens = append(p.tokens, r.Header.Get("Authorization"))
		if key := r.PathValue("key"); p.sent[key] > 0 {
			_ = json.NewEncoder(w).Encode(map[string]string{"id": "sms_" + key})
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *provider) set(f func(p *provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// secrets is Secrets Manager holding the provider's token at tokenARN.
type secrets struct {
	mu    sync.Mutex
	calls int
	gone  bool // no such secret
}

func (s *secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.gone || aws.ToString(in.SecretId) != tokenARN {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	}
	return &secretsmanager.GetSecretValueOutput{ARN: in.SecretId, SecretString: aws.String(token)}, nil
}

// run is the consumer as Start builds it at init, with the environment
// the stack sets (infra), on a memory store, against the provider.
type run struct {
	h        *consumer.Handler
	provider *provider
	secrets  *secrets
}

func newRun(t *testing.T) *run {
	t.Helper()
	r := &run{provider: newProvider(t), secrets: &secrets{}}
	getenv := env(map[string]string{reminders.EnvSMSURL: r.provider.URL, reminders.EnvSMSToken: tokenARN})
	cfg, err := consumer.Load(getenv)
	if err != nil {
		t.Fatal(err)
	}
	rt := &consumer.Runtime{Config: cfg, Env: consumer.NewEnv(getenv), SecretsManager: r.secrets}
	eff, err := reminders.Setup(t.Context(), rt)
	if err := errors.Join(err, rt.Env.Err("consumer")); err != nil {
		t.Fatal(err)
	}
	r.h, err = consumer.New(cfg, idemtest.NewMemoryStore(), eff,
		consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// env is the stack's environment (what infra sets for the consumer) with
// the effect's variables, as a getenv.
func env(effect map[string]string) func(string) string {
	vars := map[string]string{
		consumer.EnvTable: "receipts", consumer.EnvMode: consumer.ModeLease,
		consumer.EnvKey: reminders.KeyField, consumer.EnvNamespace: reminders.Namespace,
	}
	for k, v := range effect {
		vars[k] = v
	}
	return func(name string) string { return vars[name] }
}

// deliver runs one batch and returns the failed message ids.
func (r *run) deliver(t *testing.T, msgs ...events.SQSMessage) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := r.h.Handle(ctx, events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

// reminder is a message as the team's scheduler sends it: the key in the
// reminderId attribute, the appointment in the body.
func reminder(id, key string) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id,
		Body:      `{"to":"+4915112345678","patient":"Ada","clinic":"Dr. Lovelace","at":"2026-12-24T09:30:00+01:00"}`,
		MessageAttributes: map[string]events.SQSMessageAttribute{
			reminders.KeyField: {DataType: "String", StringValue: aws.String(key)},
		},
	}
}

// TestOneSMSPerReminder: copies of a reminder, in one batch and in later
// ones, send one SMS, with the key as its Idempotency-Key and the token
// read once, at init.
func TestOneSMSPerReminder(t *testing.T) {
	r := newRun(t)
	if failed := r.deliver(t, reminder("m1", "r-1"), reminder("m2", "r-1"), reminder("m3", "r-2"), reminder("m4", "r-1")); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	if failed := r.deliver(t, reminder("m5", "r-2"), reminder("m6", "r-1")); len(failed) != 0 {
		t.Fatalf("copies later: failed %v", failed)
	}
	r.provider.mu.Lock()
	defer r.provider.mu.Unlock()
	if want := map[string]int{"r-1": 1, "r-2": 1}; fmt.Sprint(r.provider.sent) != fmt.Sprint(want) || r.provider.posts != 2 {
		t.Errorf("sent %v in %d calls, want %v in 2", r.provider.sent, r.provider.posts, want)
	}
	for _, auth := range r.provider.tokens {
		if auth != "Bearer "+token {
			t.Errorf("Authorization %q, want the secret's token", auth)
		}
	}
	if r.secrets.calls != 1 {
		t.Errorf("the secret read %d times, want once, at init", r.secrets.calls)
	}
}

// TestLostReplyReconciled: an SMS the provider sent although its reply was
// lost is not sent again: the next delivery asks the provider first, finds
// it, and writes the receipt. Go's transport does not replay the POST on
// its own.
func TestLostReplyReconciled(t *testing.T) {
	r := newRun(t)
	r.deliver(t, reminder("m0", "r-0")) // a connection to reuse, which the lost reply breaks
	r.provider.set(func(p *provider) { p.lose = true })
	if failed := r.deliver(t, reminder("m1", "r-1")); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("reply lost: failed %v, want m1", failed)
	}
	r.provider.set(func(p *provider) { p.lose = false })
	if failed := r.deliver(t, reminder("m2", "r-1")); len(failed) != 0 {
		t.Fatalf("after the lost reply: failed %v", failed)
	}
	r.provider.mu.Lock()
	defer r.provider.mu.Unlock()
	if r.provider.sent["r-1"] != 1 || r.provider.lookups != 1 || r.provider.posts != 2 {
		t.Errorf("r-1 sent %d times, %d lookups, %d calls; want 1 SMS reconciled by 1 lookup, 2 calls (r-0, r-1 once)",
			r.provider.sent["r-1"], r.provider.lookups, r.provider.posts)
	}
}

// TestRefusalsAreDefinite: a refusal (4xx but 409) sent nothing; the next
// delivery sends at once without asking the provider. A 409 (the provider
// still works on the key) and a 5xx may hide an SMS: the next delivery
// asks first.
func TestRefusalsAreDefinite(t *testing.T) {
	for _, tt := range []struct {
		status  int
		lookups int
	}{
		{http.StatusBadRequest, 0},
		{http.StatusUnauthorized, 0},
		{http.StatusTooManyRequests, 0},
		{http.StatusConflict, 1},
		{http.StatusBadGateway, 1},
	} {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			r := newRun(t)
			r.provider.set(func(p *provider) { p.answer = tt.status })
			if failed := r.deliver(t, reminder("m1", "r-1")); !slices.Equal(failed, []string{"m1"}) {
				t.Fatalf("failed %v, want m1", failed)
			}
			r.provider.set(func(p *provider) { p.answer = 0 })
			if failed := r.deliver(t, reminder("m2", "r-1")); len(failed) != 0 {
				t.Fatalf("next delivery: failed %v", failed)
			}
			r.provider.mu.Lock()
			defer r.provider.mu.Unlock()
			if r.provider.sent["r-1"] != 1 || r.provider.lookups != tt.lookups {
				t.Errorf("sent %d, %d lookups; want 1 SMS after %d", r.provider.sent["r-1"], r.provider.lookups, tt.lookups)
			}
		})
	}
}

// TestBadReminder: a body that is no reminder fails alone, definite,
// without a call.
func TestBadReminder(t *testing.T) {
	r := newRun(t)
	bad := reminder("bad", "r-9")
	bad.Body = `{"to":"015112345678"}`
	if failed := r.deliver(t, bad, reminder("m1", "r-1")); !slices.Equal(failed, []string{"bad"}) {
		t.Fatalf("failed %v, want bad only", failed)
	}
	r.provider.mu.Lock()
	defer r.provider.mu.Unlock()
	if r.provider.sent["r-9"] != 0 || r.provider.posts != 1 {
		t.Errorf("%d calls, r-9 sent %d times; want 1 call, for r-1", r.provider.posts, r.provider.sent["r-9"])
	}
}

// TestSetupProblems: a missing or unreadable token and a missing URL stop
// the instance at init, each named by its variable, in one error; the
// token's value is in none.
func TestSetupProblems(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		gone bool
		want []string // in the error
	}{
		{"secret missing", map[string]string{reminders.EnvSMSURL: "https://sms.example/v1", reminders.EnvSMSToken: tokenARN}, true,
			[]string{"SMS_TOKEN: secret " + tokenARN + ": ResourceNotFoundException"}},
		{"nothing set", nil, false, []string{"SMS_URL: required", "SMS_TOKEN: required"}},
		{"bad url", map[string]string{reminders.EnvSMSURL: "sms.example", reminders.EnvSMSToken: tokenARN}, false,
			[]string{`SMS_URL: "sms.example" is not an absolute http(s) URL`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &consumer.Runtime{Env: consumer.NewEnv(env(tt.env)), SecretsManager: &secrets{gone: tt.gone}}
			if _, err := reminders.Setup(t.Context(), rt); err != nil {
				t.Fatal(err)
			}
			err := rt.Env.Err("consumer")
			if !errors.Is(err, consumer.ErrConfig) {
				t.Fatalf("err = %v, want a configuration error", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v\ndoes not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("%v shows the token", err)
			}
		})
	}
}
