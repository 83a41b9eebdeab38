package main

// Fault injection for the integration suite: wrappers around the
// producer's clients, put there by the one line of main.go marked FAULTS.
// Nothing else calls into this file, and it reads its FAULT_* variables
// itself. Everything is inert unless a FAULT_* variable is set; the stack
// sets none, and with none set the clients are not wrapped at all.
//
// A fork deletes this file and the line marked FAULTS in main.go.

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// withFaults is main's one line of fault wiring: store and client wrapped in
// the switches of the environment. Only the integration suite sets them, so
// a bad one stops the process, as a bad configuration does.
func withFaults(store idem.Store, client SQS) (idem.Store, SQS) {
	f, err := loadFaults(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return f.wrap(store, client)
}

// loadFaults reads the switches with getenv. The error is an
// *envconfig.Error naming every bad variable.
func loadFaults(getenv func(string) string) (Faults, error) {
	e := envconfig.NewReader(getenv)
	f := Faults{
		FailSend:           e.Bool("FAULT_FAIL_SEND"),
		FailSendKeys:       e.List("FAULT_FAIL_SEND_KEYS"),
		FailPostSendUpdate: e.Bool("FAULT_FAIL_POST_SEND_UPDATE"),
	}
	return f, e.Err("producer faults")
}

// wrap puts the switched-on faults between the producer and its clients;
// a client without a switch on is returned as it is.
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
