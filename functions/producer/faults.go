package main

// Fault switches for tests. Everything here is inert unless its environment
// variable is set; a fork deletes this file and the wrap call in producer.go.

import (
	"context"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ErrInjected is the error of an injected fault.
var ErrInjected = errors.New("producer: injected fault")

// Faults are the fault switches.
type Faults struct {
	// FailSend (FAULT_FAIL_SEND=true): every SendMessageBatch call fails.
	// A failed call is not retried by the producer (the SDK retries calls),
	// so each order fails after one call and its record is released.
	FailSend bool
	// FailSendKeys (FAULT_FAIL_SEND_KEYS, comma-separated order ids): these
	// entries come back as failed entries of an otherwise successful batch,
	// not the sender's fault, so they are retried SEND_ATTEMPTS times.
	FailSendKeys []string
	// FailPostSendUpdate (FAULT_FAIL_POST_SEND_UPDATE=true): writing the
	// receipt after a successful send fails. The record stays IN_PROGRESS,
	// so its lease keeps re-sends out until it expires; after that a re-run
	// sends the order again, and the consumer, keyed by the same order id,
	// treats the copy as a duplicate: no double effect.
	FailPostSendUpdate bool
}

func loadFaults(e *envconfig.Reader) Faults {
	return Faults{
		FailSend:           e.Bool("FAULT_FAIL_SEND"),
		FailSendKeys:       e.List("FAULT_FAIL_SEND_KEYS"),
		FailPostSendUpdate: e.Bool("FAULT_FAIL_POST_SEND_UPDATE"),
	}
}

// wrap puts the switched-on faults between the producer and its clients.
func (f Faults) wrap(store idem.Store, client SQS) (idem.Store, SQS) {
	if f.FailPostSendUpdate {
		store = failingComplete{store}
	}
	if f.FailSend || len(f.FailSendKeys) > 0 {
		client = failingSQS{SQS: client, all: f.FailSend, keys: f.FailSendKeys}
	}
	return store, client
}

// failingComplete is a Store whose Complete fails without writing.
type failingComplete struct{ idem.Store }

func (s failingComplete) Complete(context.Context, string, string, idem.Completion) error {
	return errors.Join(ErrInjected, errors.New("post-send update (receipt) not written"))
}

type failingSQS struct {
	SQS
	all  bool
	keys []string
}

func (f failingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if f.all {
		return nil, errors.Join(ErrInjected, errors.New("SendMessageBatch failed"))
	}
	var failed []types.BatchResultErrorEntry
	pass := *in
	pass.Entries = nil
	for _, e := range in.Entries {
		if slices.Contains(f.keys, aws.ToString(e.MessageAttributes[OrderIDAttribute].StringValue)) {
			failed = append(failed, types.BatchResultErrorEntry{
				Id: e.Id, Code: aws.String("InjectedFault"), Message: aws.String(ErrInjected.Error()),
			})
			continue
		}
		pass.Entries = append(pass.Entries, e)
	}
	out := &sqs.SendMessageBatchOutput{}
	if len(pass.Entries) > 0 {
		var err error
		if out, err = f.SQS.SendMessageBatch(ctx, &pass, opts...); err != nil {
			return nil, err
		}
	}
	out.Failed = append(out.Failed, failed...)
	return out, nil
}
