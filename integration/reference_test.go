//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// referenceLock is the protocol of the article the project grew from
// (shared/seeds/000, "How to prevent duplicate SQS messages"), in Go, to
// compare side by side: a conditional put as a lock that expires after a
// timeout, an unconditional update to mark the message processed, and a
// delete to release the lock when processing fails. It has no fencing token,
// no stored result and no payload fingerprint.
type referenceLock struct {
	client  *dynamodb.Client
	table   string
	timeout time.Duration
	now     func() time.Time
}

func (r referenceLock) key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{dynamostore.DefaultSchema.PartitionKey: &types.AttributeValueMemberS{Value: id}}
}

// acquire reports whether the lock was taken: false means processed or
// being processed, and the caller discards the message.
func (r referenceLock) acquire(ctx context.Context, id string) (bool, error) {
	now := r.now()
	cond := expression.Or(
		expression.AttributeNotExists(expression.Name(dynamostore.DefaultSchema.PartitionKey)),
		expression.And(
			expression.Name("ts").LessThan(expression.Value(now.Add(-r.timeout).UnixMilli())),
			expression.Name("status").Equal(expression.Value("PROCESSING")),
		),
	)
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return false, err
	}
	item := r.key(id)
	item["status"] = &types.AttributeValueMemberS{Value: "PROCESSING"}
	item["ts"] = &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli())}
	_, err = r.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(r.table),
		Item:                      item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
}

func (r referenceLock) markProcessed(ctx context.Context, id string) error {
	_, err := r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.table),
		Key:                       r.key(id),
		UpdateExpression:          aws.String("SET #s = :done"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":done": &types.AttributeValueMemberS{Value: "PROCESSED"}},
	})
	return err
}

func (r referenceLock) release(ctx context.Context, id string) error {
	_, err := r.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(r.table), Key: r.key(id)})
	return err
}

func (r referenceLock) process(ctx context.Context, id string, effect func() error) (ran bool, err error) {
	ok, err := r.acquire(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	if err := effect(); err != nil {
		return true, errors.Join(err, r.release(ctx, id))
	}
	return true, r.markProcessed(ctx, id)
}

// TestZombieReleaseReferenceVsGuard runs the same interleaving against the
// reference protocol and the Guard: attempt A stalls past its lock timeout,
// B takes over and is still running its effect when A fails and releases;
// then C arrives. With the reference, A's release deletes B's lock and C
// runs the effect concurrently with B. With the Guard, A's release is fenced
// by its lease token (ErrLeaseLost) and C is told the key is in progress.
func TestZombieReleaseReferenceVsGuard(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	client, _, err := emu.Clients(ctx, dynamoEndpoint(t), sqsEndpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	table := createReceiptTable(ctx, t, client)
	clock := idemtest.NewClock(time.Now())

	t.Run("reference", func(t *testing.T) {
		ref := referenceLock{client: client, table: table, timeout: 10 * time.Second, now: clock.Now}
		id := uniqueName("order")
		must := func(ok bool, err error) bool {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !must(ref.acquire(ctx, id)) { // A
			t.Fatal("A could not acquire")
		}
		clock.Advance(11 * time.Second)  // A stalls past its lock timeout
		if !must(ref.acquire(ctx, id)) { // B takes over and runs its effect
			t.Fatal("B could not take over")
		}
		if err := ref.release(ctx, id); err != nil { // A fails late and releases
			t.Fatal(err)
		}
		if !must(ref.acquire(ctx, id)) { // C, while B still runs
			t.Fatal("the reference kept C out; this comparison no longer shows anything")
		}
		t.Log("reference: A's release deleted B's lock and C took it while B ran: two effects at once")
	})

	t.Run("guard", func(t *testing.T) {
		store, err := dynamostore.New(client, table)
		if err != nil {
			t.Fatal(err)
		}
		g, err := idem.New(store, uniqueName("ns"), idem.WithClock(clock.Now), idem.WithLease(10*time.Second), idem.WithSafetyMargin(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		key := uniqueName("order")
		bRunning, aDone := make(chan struct{}), make(chan struct{})
		bResult := make(chan error, 1)
		_, aErr := g.Do(ctx, key, nil, func(context.Context) ([]byte, error) { // A
			clock.Advance(11 * time.Second) // A stalls past its lease
			go func() {                     // B takes over and runs its effect until A is done
				_, err := g.Do(ctx, key, nil, func(context.Context) ([]byte, error) {
					close(bRunning)
					select {
					case <-aDone:
					case <-ctx.Done():
					}
					return []byte("B"), nil
				})
				bResult <- err
			}()
			select {
			case <-bRunning:
			case err := <-bResult:
				t.Errorf("B did not take over A's lapsed lease: %v", err)
			case <-ctx.Done():
				t.Errorf("waiting for B to take over: %v", ctx.Err())
			}
			return nil, errors.New("A fails late")
		})
		if !errors.Is(aErr, idem.ErrLeaseLost) {
			t.Fatalf("A's release: %v, want ErrLeaseLost (fenced)", aErr)
		}
		cRes, cErr := g.Do(ctx, key, nil, func(context.Context) ([]byte, error) { // C, while B runs
			t.Error("C ran while B held the key")
			return nil, nil
		})
		close(aDone)
		if !errors.Is(cErr, idem.ErrInProgress) || cRes.Outcome != idem.InProgress {
			t.Fatalf("C while B runs: %+v, %v; want ErrInProgress", cRes, cErr)
		}
		select {
		case err := <-bResult:
			if err != nil {
				t.Fatalf("B: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("waiting for B to complete: %v", ctx.Err())
		}
		t.Log("Guard: A's release refused (lease lost), C told in progress, B completed: one effect at a time")
	})
}

// BenchmarkReferenceNewMessage and BenchmarkReferenceDuplicate measure the
// reference protocol next to BenchmarkNewMessage and BenchmarkDuplicate.
func BenchmarkReferenceNewMessage(b *testing.B) {
	env := setupBench(b)
	ref := referenceLock{client: env.client, table: env.receipts, timeout: time.Minute, now: time.Now}
	ctx := context.Background()
	measure(b, env, func(int) {
		if ran, err := ref.process(ctx, newKey(), func() error { return nil }); !ran || err != nil {
			b.Fatalf("ran %v, %v", ran, err)
		}
	})
}

func BenchmarkReferenceDuplicate(b *testing.B) {
	env := setupBench(b)
	ref := referenceLock{client: env.client, table: env.receipts, timeout: time.Minute, now: time.Now}
	ctx := context.Background()
	key := newKey()
	if _, err := ref.process(ctx, key, func() error { return nil }); err != nil {
		b.Fatal(err)
	}
	measure(b, env, func(int) {
		if ran, err := ref.process(ctx, key, func() error { return nil }); ran || err != nil {
			b.Fatalf("ran %v, %v", ran, err)
		}
	})
}
