//go:build unix

package ddbmodel

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// BenchmarkAcquire measures the real Store against the model: per
// iteration an Acquire of a new key, its Complete, a duplicate Acquire
// answered with the record (ALL_OLD), and TTL's DeleteItem (so that the
// table stays small, as in a simulation): four requests, reported per
// request, in wall time and in CPU time of the process (GC included),
// which other processes loading the machine inflate less.
func BenchmarkAcquire(b *testing.B) {
	srv := New()
	mustCreate(b, srv, "receipts", "pk", "")
	store, err := dynamostore.New(srv, "receipts")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	result := []byte("result of the effect")
	table := aws.String("receipts")
	b.ReportAllocs()
	cpu := cpuTime()
	i := 0
	for b.Loop() {
		key := "ns#" + strconv.Itoa(i)
		i++
		a := idem.Acquisition{Key: key, Lease: "lease-" + key, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now, Fingerprint: "fp"}
		if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
			b.Fatalf("Acquire: %v, %v", ok, err)
		}
		if err := store.Complete(ctx, key, a.Lease, idem.Completion{Result: result, ExpiresAt: a.ExpiresAt, Now: now}); err != nil {
			b.Fatalf("Complete: %v", err)
		}
		a.Lease = "other"
		if rec, ok, err := store.Acquire(ctx, a); err != nil || ok || rec.Status != idem.StatusCompleted {
			b.Fatalf("duplicate Acquire: %+v, %v, %v", rec, ok, err)
		}
		if _, err := srv.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(4*b.N), "ns/request")
	b.ReportMetric(float64(cpuTime()-cpu)/float64(4*b.N), "cpu-ns/request")
}

// cpuTime is the CPU time the process has used, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkModel measures the model alone: the requests of one iteration
// of BenchmarkAcquire, recorded once, sent again with a new key each time.
func BenchmarkModel(b *testing.B) {
	srv := New()
	mustCreate(b, srv, "receipts", "pk", "")
	store, err := dynamostore.New(srv, "receipts")
	if err != nil {
		b.Fatal(err)
	}
	var calls []Call
	srv.SetRecorder(func(c Call) { calls = append(calls, c) })
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	a := idem.Acquisition{Key: "k", Lease: "lease", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now, Fingerprint: "fp"}
	if _, _, err := store.Acquire(ctx, a); err != nil {
		b.Fatal(err)
	}
	if err := store.Complete(ctx, "k", a.Lease, idem.Completion{Result: []byte("result of the effect"), ExpiresAt: a.ExpiresAt, Now: now}); err != nil {
		b.Fatal(err)
	}
	a.Lease = "other"
	if _, _, err := store.Acquire(ctx, a); err != nil {
		b.Fatal(err)
	}
	if _, err := srv.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("receipts"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
		b.Fatal(err)
	}
	srv.SetRecorder(nil)
	b.ReportAllocs()
	cpu := cpuTime()
	i := 0
	for b.Loop() {
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ns#" + strconv.Itoa(i)}}
		i++
		for _, c := range calls {
			var err error
			switch in := c.Input.(type) {
			case *dynamodb.UpdateItemInput:
				cp := *in
				cp.Key = key
				_, err = srv.UpdateItem(ctx, &cp)
			case *dynamodb.DeleteItemInput:
				cp := *in
				cp.Key = key
				_, err = srv.DeleteItem(ctx, &cp)
			}
			if err != nil && c.Err == nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(calls)*b.N), "ns/request")
	b.ReportMetric(float64(cpuTime()-cpu)/float64(len(calls)*b.N), "cpu-ns/request")
}
