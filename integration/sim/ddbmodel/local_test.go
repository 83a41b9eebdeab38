//go:build integration

package ddbmodel

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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
)

// The differential tests compare the model with DynamoDB Local 3.3.1,
// started once for the package by TestMain.

// local is the client of DynamoDB Local, without retries: a reply is the
// server's answer to one request.
var local *dynamodb.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := emu.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := emu.StartDynamoDB(ctx, root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	local = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL())
		o.DisableValidateResponseChecksum = true // DynamoDB Local omits the CRC on errors
		o.Retryer = aws.NopRetryer{}
	})
	return m.Run()
}

// createLocal creates a table on DynamoDB Local and the same on srv.
func createLocal(t testing.TB, srv *Server, name, pk, sk string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}},
	}
	if sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	if _, err := local.CreateTable(ctx, in); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(local).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("wait for table %s: %v", name, err)
	}
	if srv != nil {
		mustCreate(t, srv, name, pk, sk)
	}
}

// scanLocal returns every item of a DynamoDB Local table.
func scanLocal(t testing.TB, name string) []map[string]types.AttributeValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(local, &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("scan %s: %v", name, err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// compareTables checks that a table holds the same items on DynamoDB
// Local and in the model.
func compareTables(t testing.TB, srv *Server, name string) {
	t.Helper()
	want := map[string]bool{}
	for _, it := range scanLocal(t, name) {
		want[render(it)] = true
	}
	got := srv.Items(name)
	for _, it := range got {
		if !want[render(it)] {
			t.Errorf("table %s: the model has %s, DynamoDB Local does not", name, render(it))
		}
		delete(want, render(it))
	}
	for it := range want {
		t.Errorf("table %s: DynamoDB Local has %s, the model does not", name, it)
	}
	t.Logf("table %s: %d items compared", name, len(got))
}

// recorder is a Client that records every request it passes on and the
// reply, as the model's recorder does.
type recorder struct {
	Client
	mu    sync.Mutex
	calls []Call
}

func (r *recorder) add(op string, in, out any, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Op: op, Input: in, Output: out, Err: err})
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := r.Client.UpdateItem(ctx, in, opts...)
	r.add("UpdateItem", in, nilIfErr(out, err), err)
	return out, err
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := r.Client.GetItem(ctx, in, opts...)
	r.add("GetItem", in, nilIfErr(out, err), err)
	return out, err
}

func (r *recorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := r.Client.TransactWriteItems(ctx, in, opts...)
	r.add("TransactWriteItems", in, nilIfErr(out, err), err)
	return out, err
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := r.Client.PutItem(ctx, in, opts...)
	r.add("PutItem", in, nilIfErr(out, err), err)
	return out, err
}

func (r *recorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := r.Client.DeleteItem(ctx, in, opts...)
	r.add("DeleteItem", in, nilIfErr(out, err), err)
	return out, err
}
