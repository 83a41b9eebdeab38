package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The SMS provider's API token is a secret: the construct's
// ConsumerProps.Secrets puts its ARN in SMS_TOKEN and lets the function
// read it, and Setup reads it once per instance, at cold start. A token
// that cannot be read stops the instance at init, named by its variable,
// with every other problem.
func ExampleRuntime_Secret() {
	consumer.Start(func(ctx context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
		token := rt.Secret(ctx, "SMS_TOKEN")   // the construct's Secrets: read once, here
		provider := rt.Env.Required("SMS_URL") // the construct's Environment
		return consumer.Effect{
			Lease: func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
				return send(ctx, provider, token, key, msg.Body) // Authorization: Bearer token; Idempotency-Key: key
			},
		}, nil
	})
}

// send is the provider's call: an HTTP POST in a real effect.
func send(ctx context.Context, provider, token, key, body string) ([]byte, error) { return nil, nil }

const tokenARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sms-token-AbCdEf"

// fakeSecrets answers GetSecretValue from a map of ARN to value (nil: a
// binary secret) and counts the calls.
type fakeSecrets struct {
	mu      sync.Mutex
	secrets map[string]*string
	calls   int
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	v, ok := f.secrets[aws.ToString(in.SecretId)]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	}
	return &secretsmanager.GetSecretValueOutput{ARN: in.SecretId, SecretString: v}, nil
}

var _ consumer.SecretsManagerAPI = (*fakeSecrets)(nil)

// TestSecret: the value, or a problem named by the variable, reported as
// Start reports it at init; never the value in a problem.
func TestSecret(t *testing.T) {
	const value = "tok-3f9a"
	for _, tt := range []struct {
		name    string
		env     string  // SMS_TOKEN
		secret  *string // at tokenARN; absent when nil and missing
		missing bool
		want    string // the value, or what the problem says
	}{
		{name: "read", env: tokenARN, secret: aws.String(value), want: value},
		{name: "unset", want: "SMS_TOKEN: required"},
		{name: "blank", env: "  ", want: "SMS_TOKEN: required"},
		{name: "missing", env: tokenARN, missing: true, want: "SMS_TOKEN: secret " + tokenARN + ": ResourceNotFoundException"},
		{name: "binary", env: tokenARN, want: "SMS_TOKEN: secret " + tokenARN + " holds no string"},
		{name: "empty", env: tokenARN, secret: aws.String(""), want: "SMS_TOKEN: secret " + tokenARN + " is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeSecrets{secrets: map[string]*string{}}
			if !tt.missing {
				fake.secrets[tokenARN] = tt.secret
			}
			rt := &consumer.Runtime{
				Env:            consumer.NewEnv(func(k string) string { return map[string]string{"SMS_TOKEN": tt.env}[k] }),
				SecretsManager: fake,
			}
			got := rt.Secret(t.Context(), "SMS_TOKEN")
			err := rt.Env.Err("consumer")
			if tt.want == value {
				if got != value || err != nil {
					t.Fatalf("Secret = %q, problems %v; want %q", got, err, value)
				}
				return
			}
			var cerr *consumer.ConfigError
			if got != "" || !errors.As(err, &cerr) || !errors.Is(err, consumer.ErrConfig) ||
				!slices.Equal(cerr.Vars(), []string{"SMS_TOKEN"}) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Secret = %q, problems %v; want none and a problem with SMS_TOKEN saying %q", got, err, tt.want)
			}
			if strings.Contains(err.Error(), value) {
				t.Errorf("the problem %q shows the secret's value", err)
			}
			if calls := fake.calls; calls > 1 || (tt.env == tokenARN) != (calls == 1) {
				t.Errorf("%d GetSecretValue calls, want one when the variable is set, else none", calls)
			}
		})
	}
}

// TestSecretOverTheWire: without Runtime.SecretsManager, Secret reads
// with a client of Runtime.AWS, here pointed at a server that speaks
// Secrets Manager's JSON protocol.
func TestSecretOverTheWire(t *testing.T) {
	var (
		mu   sync.Mutex
		asks []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ SecretId string }
		body, _ := io.ReadAll(r.Body)
		target := r.Header.Get("X-Amz-Target")
		mu.Lock()
		asks = append(asks, target)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if target != "secretsmanager.GetSecretValue" || json.Unmarshal(body, &in) != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"InvalidRequestException","Message":"unexpected request"}`)
			return
		}
		if in.SecretId != tokenARN {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","Message":"Secrets Manager can't find the specified secret."}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"ARN": tokenARN, "Name": "sms-token", "SecretString": "tok-3f9a"})
	}))
	defer srv.Close()
	cfg := aws.Config{
		Region:       "eu-west-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(srv.URL),
	}
	env := map[string]string{"SMS_TOKEN": tokenARN, "OTHER_TOKEN": tokenARN + "-gone"}
	rt := &consumer.Runtime{AWS: cfg, Env: consumer.NewEnv(func(k string) string { return env[k] })}

	if got := rt.Secret(t.Context(), "SMS_TOKEN"); got != "tok-3f9a" {
		t.Errorf("Secret(SMS_TOKEN) = %q, want the server's value; problems: %v", got, rt.Env.Err("consumer"))
	}
	if got := rt.Secret(t.Context(), "OTHER_TOKEN"); got != "" {
		t.Errorf("Secret(OTHER_TOKEN) = %q, want none", got)
	}
	err := rt.Env.Err("consumer")
	if err == nil || !strings.Contains(err.Error(), "OTHER_TOKEN: secret "+tokenARN+"-gone") || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("problems %v, want OTHER_TOKEN's ResourceNotFoundException", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"secretsmanager.GetSecretValue", "secretsmanager.GetSecretValue"}; !slices.Equal(asks, want) {
		t.Errorf("requests %v, want %v", asks, want)
	}
}
