package faultproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// backend answers every request like DynamoDB's GetItem with an empty item
// and counts what reached it.
func backend(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func client(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		Retryer:      aws.NopRetryer{},
	})
}

func get(c *dynamodb.Client) error {
	_, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
	})
	return err
}

// Each injected fault reaches the SDK as the error DynamoDB would send, and
// only a lost acknowledgement reaches the backend.
func TestFaultsAsTheSDKSeesThem(t *testing.T) {
	srv, reached := backend(t)
	p, err := Start(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := client(p.URL())
	for _, tc := range []struct {
		kind    Kind
		want    any
		reaches bool
	}{
		{Pass, nil, true},
		{Fail, &types.InternalServerError{}, false},
		{Throttle, &types.ThrottlingException{}, false},
		{ThroughputExceeded, &types.ProvisionedThroughputExceededException{}, false},
		{LoseAck, &types.InternalServerError{}, true},
	} {
		p.SetDecider(func(Request) Action { return Action{Kind: tc.kind} })
		before := reached.Load()
		err := get(c)
		switch want := tc.want.(type) {
		case nil:
			if err != nil {
				t.Errorf("%v: %v", tc.kind, err)
			}
		case *types.InternalServerError:
			if !errors.As(err, &want) {
				t.Errorf("%v: %v, want InternalServerError", tc.kind, err)
			}
		case *types.ThrottlingException:
			if !errors.As(err, &want) {
				t.Errorf("%v: %v, want ThrottlingException", tc.kind, err)
			}
		case *types.ProvisionedThroughputExceededException:
			if !errors.As(err, &want) {
				t.Errorf("%v: %v, want ProvisionedThroughputExceededException", tc.kind, err)
			}
		}
		if got := reached.Load() > before; got != tc.reaches {
			t.Errorf("%v: reached the backend %v, want %v", tc.kind, got, tc.reaches)
		}
		if err != nil && strings.Contains(err.Error(), "checksum") {
			t.Errorf("%v: checksum error %v", tc.kind, err)
		}
	}
	if c := p.Counts(); c["GetItem"] != 5 {
		t.Fatalf("counts %v, want 5 GetItem", c)
	}
	if f := p.Faults(); f[Fail] != 1 || f[LoseAck] != 1 || f[Pass] != 0 {
		t.Fatalf("faults %v", f)
	}
}

func TestDelayAndMix(t *testing.T) {
	srv, _ := backend(t)
	p, err := Start(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetDecider(Mix{Delay: 30 * time.Millisecond}.Decider())
	start := time.Now()
	if err := get(client(p.URL())); err != nil || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("delay: %v after %s", err, time.Since(start))
	}
	m := Mix{Fail: 0.1, Throttle: 0.1, LoseAck: 0.05, Seed: 7}.Decider()
	counts := map[Kind]int{}
	for i := range 10000 {
		counts[m(Request{Op: "UpdateItem", Seq: int64(i)}).Kind]++
	}
	if f := float64(counts[Fail]) / 10000; f < 0.08 || f > 0.12 {
		t.Fatalf("fail rate %.3f, want about 0.1 (%v)", f, counts)
	}
	if l := float64(counts[LoseAck]) / 10000; l < 0.035 || l > 0.065 {
		t.Fatalf("lose-ack rate %.3f, want about 0.05 (%v)", l, counts)
	}
	only := Mix{Fail: 1, Ops: []string{"TransactWriteItems"}}.Decider()
	if only(Request{Op: "UpdateItem"}).Kind != Pass || only(Request{Op: "TransactWriteItems"}).Kind != Fail {
		t.Fatal("Ops not honoured")
	}
}
