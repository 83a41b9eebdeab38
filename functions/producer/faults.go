//go:build sqsidem_faults

package main

// The fault switches of the integration suite (contract.EnvFault*),
// compiled only with the build tag sqsidem_faults: wrappers around the
// producer's clients. Everything is inert unless a FAULT_* variable is
// set.

import (
	"context"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// ErrInjected is the error of an injected fault.
var ErrInjected = errors.New("producer: injected fault")

// faults are the switches.
type faults struct {
	// failSend: every SendMessageBatch call fails. A failed call is not
	// retried by the producer (the SDK retries calls), so each message
	// fails after one call and its record is released.
	failSend bool
	// failSendKeys: these entries come back as failed entries of an
	// otherwise successful batch, not the sender's fault, so they are
	// retried SEND_ATTEMPTS times.
	failSendKeys []string
	// failPostSendUpdate: writing the receipt after a successful send
	// fails. The record stays IN_PROGRESS, so its lease keeps re-sends
	// out until it expires; after that a re-run sends the message again,
	// and the consumer, keyed by the same key, treats the copy as a
	// duplicate: no double effect.
	failPostSendUpdate bool
}

// loadFaults reads the switches; the error is a *consumer.ConfigError
// naming every bad one.
func loadFaults(getenv func(string) string) (faults, error) {
	e := consumer.NewEnv(getenv)
	f := faults{
		failSend:           e.Bool(contract.EnvFaultFailSend),
		failSendKeys:       e.List(contract.EnvFaultFailSendKeys),
		failPostSendUpdate: e.Bool(contract.EnvFaultFailPostSendUpdate),
	}
	return f, e.Err("producer faults")
}

// wrap puts the switched-on faults between the producer and its clients;
// a client without a switch on is returned as it is.
func (f faults) wrap(store idem.Store, client SQS) (idem.Store, SQS) {
	if f.failPostSendUpdate {
		store = failingComplete{store}
	}
	if f.failSend || len(f.failSendKeys) > 0 {
		client = failingSQS{SQS: client, all: f.failSend, keys: f.failSendKeys}
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
		if slices.Contains(f.keys, aws.ToString(e.MessageAttributes[keyAttribute].StringValue)) {
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
