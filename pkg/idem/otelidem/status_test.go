package otelidem_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestRecordStatus: what a record span says for each way a record ends.
func TestRecordStatus(t *testing.T) {
	tests := []struct {
		name      string
		result    sqsbatch.RecordResult
		outcome   string
		errorType string // "": status Unset, no error.type
	}{
		{"executed", sqsbatch.RecordResult{Outcome: idem.Executed, Attempts: 1}, "executed", ""},
		{"duplicate", sqsbatch.RecordResult{Outcome: idem.Duplicate, Attempts: 1}, "duplicate", ""},
		{"unconfirmed succeeds, but is an error",
			sqsbatch.RecordResult{Outcome: idem.Unconfirmed, Err: fmt.Errorf("k: %w", idem.ErrUnconfirmed)}, "unconfirmed", "unconfirmed"},
		{"effect's error",
			sqsbatch.RecordResult{Outcome: idem.Failed, Err: fmt.Errorf("issue: %w", declined{}), Failed: true}, "failed", "otelidem_test.declined"},
		{"panic",
			sqsbatch.RecordResult{Outcome: idem.Failed, Err: fmt.Errorf("%w: boom", sqsbatch.ErrPanic), Failed: true}, "failed", "panic"},
		{"skipped after its group failed",
			sqsbatch.RecordResult{Err: sqsbatch.ErrGroupFailed, Failed: true}, "skipped", "skipped"},
		{"no key",
			sqsbatch.RecordResult{Outcome: idem.Rejected, Err: fmt.Errorf("key: %w", sqsbatch.ErrNoKey), Failed: true}, "rejected", "rejected"},
		{"store",
			sqsbatch.RecordResult{Outcome: idem.StoreError, Err: fmt.Errorf("k: %w", idem.ErrStore), Failed: true}, "store_error", "store_error"},
		{"lease lost",
			sqsbatch.RecordResult{Outcome: idem.LeaseLost, Err: fmt.Errorf("k: %w", idem.ErrLeaseLost), Failed: true}, "lease_lost", "lease_lost"},
		{"requeued: done, not an error",
			sqsbatch.RecordResult{Outcome: idem.InProgress, Err: fmt.Errorf("k: %w", idem.ErrInProgress), Requeued: true}, "in_progress", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, exp := newProvider(t)
			tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp))
			if err != nil {
				t.Fatal(err)
			}
			_, end := tracer.Record(context.Background(), events.SQSMessage{MessageId: "m1"})
			end(tt.result)
			span := only(t, exp.GetSpans(), func(s tracetest.SpanStub) bool { return true })
			set := attribute.NewSet(span.Attributes...)
			if v, _ := set.Value("idem.outcome"); v.AsString() != tt.outcome {
				t.Errorf("outcome %q, want %q", v.AsString(), tt.outcome)
			}
			if v, _ := set.Value("idem.failed"); v.AsBool() != tt.result.Failed {
				t.Errorf("failed %v", v.AsBool())
			}
			if v, ok := set.Value("idem.requeued"); ok != tt.result.Requeued || v.AsBool() != tt.result.Requeued {
				t.Errorf("idem.requeued %v (set %v), want %v", v.AsBool(), ok, tt.result.Requeued)
			}
			v, _ := set.Value("error.type")
			if v.AsString() != tt.errorType || (span.Status.Code == codes.Error) != (tt.errorType != "") || span.Status.Description != tt.errorType {
				t.Errorf("error.type %q, status %+v; want %q", v.AsString(), span.Status, tt.errorType)
			}
			if _, ok := set.Value("idem.storage_key"); ok {
				t.Error("a storage key without WithStorageKey")
			}
		})
	}
}
