package modelddb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

func client(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		Retryer:      aws.NopRetryer{},
	})
}

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The real dynamostore.Store, through the SDK over HTTP to the server,
// passes the library's conformance suite: every request it sends decodes,
// and every reply and error (a failed condition with the old item, a
// cancelled transaction with its reasons) reaches the Store as DynamoDB's.
func TestConformanceOverHTTP(t *testing.T) {
	s := start(t)
	for _, tb := range []string{"receipts", "ledger"} {
		if err := s.CreateTable(tb, "id"); err != nil {
			t.Fatal(err)
		}
	}
	c := client(s.URL())
	schema := dynamostore.DefaultSchema
	schema.PartitionKey = "id"
	store, err := dynamostore.New(c, "receipts", dynamostore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("suite", func(t *testing.T) { // returns when its parallel subtests are done
		idemtest.TestStore(t, func(*testing.T) idem.Store { return store },
			idemtest.WithCounter(ledgerIncrement("ledger"), ledgerCount(c, "ledger")))
	})
	if n := s.Counts()["TransactWriteItems"]; n == 0 {
		t.Errorf("counts %v: no TransactWriteItems counted", s.Counts())
	}
}

func ledgerIncrement(table string) func(id string) any {
	return func(id string) any {
		x, err := expression.NewBuilder().WithUpdate(expression.Add(expression.Name("n"), expression.Value(1))).Build()
		if err != nil {
			panic(err) // a constant expression
		}
		return types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			UpdateExpression:          x.Update(),
			ExpressionAttributeNames:  x.Names(),
			ExpressionAttributeValues: x.Values(),
		}}
	}
}

func ledgerCount(c *dynamodb.Client, table string) func(ctx context.Context, id string) (int, error) {
	return func(ctx context.Context, id string) (int, error) {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(table),
			Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		})
		if err != nil {
			return 0, err
		}
		n, ok := out.Item["n"].(*types.AttributeValueMemberN)
		if !ok {
			return 0, nil
		}
		return strconv.Atoi(n.Value)
	}
}

// Requests in flight wait out their latency at the same time: the point of
// this server (DynamoDB Local answers them one after the other). Ten
// requests must all be inside their wait at once before any may leave.
func TestRequestsWaitConcurrently(t *testing.T) {
	const n = 10
	var mu sync.Mutex
	inside := 0
	all := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := &Server{}
	err := s.listen(func(rctx context.Context) {
		mu.Lock()
		inside++
		if inside == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-rctx.Done():
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateTable("t", "id"); err != nil {
		t.Fatal(err)
	}
	c := client(s.URL())
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"),
				Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			mu.Lock()
			got := inside
			mu.Unlock()
			t.Fatalf("waited 10 s for %d requests in flight at once, %d were: %v", n, got, err)
		}
	}
	if got := s.Counts()["PutItem"]; got != n {
		t.Errorf("PutItem counted %d times, want %d", got, n)
	}
	if got := s.Conns(); got != n {
		t.Errorf("%d connections accepted, want one per request in flight (%d)", got, n)
	}
}

// A request the server does not serve is refused with its reason, not
// answered.
func TestNotServed(t *testing.T) {
	s := start(t)
	if err := s.CreateTable("t", "id"); err != nil {
		t.Fatal(err)
	}
	_, err := client(s.URL()).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t")})
	var api interface{ ErrorMessage() string }
	if !errors.As(err, &api) || api.ErrorMessage() != `modelddb: not served: operation "Scan"` {
		t.Fatalf("Scan: %v, want a ValidationException naming the operation", err)
	}
}

// Every attribute value type decodes to the SDK's, empty maps and lists
// included; a value of two types, or of one DynamoDB does not have, is
// refused; and what decodes encodes back to the same JSON.
func TestValueCodec(t *testing.T) {
	body := `{"TableName":"t","Item":{"s":{"S":"a"},"n":{"N":"1.5"},"b":{"B":"AAE="},"t":{"BOOL":true},"z":{"NULL":true},` +
		`"m":{"M":{}},"l":{"L":[{"S":"x"},{"L":[]}]},"ss":{"SS":["a","b"]},"ns":{"NS":["1"]},"bs":{"BS":["AQ=="]}}}`
	r, err := decodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	it, err := decodeItem(r.Item)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := it["m"].(*types.AttributeValueMemberM); !ok || m.Value == nil || len(m.Value) != 0 {
		t.Errorf("empty map: %#v", it["m"])
	}
	if l, ok := it["l"].(*types.AttributeValueMemberL); !ok || len(l.Value) != 2 {
		t.Errorf("list: %#v", it["l"])
	}
	if b, ok := it["b"].(*types.AttributeValueMemberB); !ok || len(b.Value) != 2 || b.Value[1] != 1 {
		t.Errorf("binary: %#v", it["b"])
	}
	back, err := json.Marshal(encodeItem(it))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := decodeRequest(append(append([]byte(`{"Item":`), back...), '}'))
	if err != nil {
		t.Fatal(err)
	}
	it2, err := decodeItem(r2.Item)
	if err != nil || !reflect.DeepEqual(it, it2) {
		t.Errorf("round trip: %v\n%#v\n%#v", err, it, it2)
	}
	for _, bad := range []string{
		`{"Item":{"a":{"S":"x","N":"1"}}}`, // two types
		`{"Item":{"a":{"X":"x"}}}`,         // no such type
		`{"Item":{"a":{}}}`,                // none
		`{"Projection":"a"}`,               // a field not served
	} {
		r, err := decodeRequest([]byte(bad))
		if err == nil {
			_, err = decodeItem(r.Item)
		}
		if err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
