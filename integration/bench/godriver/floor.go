package main

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// The floor (--floor): a bare SDK loop that sends, for every message, the
// very requests pkg/idem sent for one new message, captured as the store
// passed them to the client, with only the key changed, on the same client.
// In lease mode it runs the bench's effect between the two requests, as
// pkg/idem does (in transactional mode the effect is the transaction's
// ledger write, captured with it). What pkg/idem costs above it is the
// library's own work: the key from the body, hashing it, fingerprinting
// the payload, building and decoding the records. The requests of every
// message are built before the clock starts.

// recorder keeps the inputs of the operations the client is asked for
// while on (the pointers the store passed: the SDK's middleware may then
// fill fields in, as the ClientRequestToken of a transaction).
type recorder struct {
	mu     sync.Mutex
	on     bool
	inputs []any
}

func (r *recorder) register(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchRecordInputs",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			r.mu.Lock()
			if r.on {
				r.inputs = append(r.inputs, in.Parameters)
			}
			r.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// capture runs call for the key with the recorder on and returns what the
// client was asked to send.
func (r *recorder) capture(call func() error) ([]any, error) {
	r.mu.Lock()
	r.on, r.inputs = true, nil
	r.mu.Unlock()
	err := call()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.inputs, err
}

// replay is the requests of one message and the key values in them that
// belong to the message (its record's storage key, and its ledger item).
type replay struct {
	inputs []any
	keyOf  func(key string) map[string]string // old value -> new value
	// effectAfter is the request after which the effect runs (lease: the
	// acquire), -1 for none.
	effectAfter int
}

// message is one message of the floor: its body and its requests.
type message struct {
	body string
	reqs []any
}

// captureMessage sends one new message through pkg/idem (lease or
// transactional, as the scenario) and returns its requests.
func (e *env) captureMessage(ctx context.Context, tx bool, call caller, key string) (*replay, error) {
	inputs, err := e.recorder.capture(func() error { return call(ctx, body(key)) })
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	want := 2 // lease: acquire and complete
	if tx {
		want = 1 // one TransactWriteItems
	}
	if len(inputs) != want {
		return nil, fmt.Errorf("capture: pkg/idem sent %d requests for a new message, want %d", len(inputs), want)
	}
	r := &replay{inputs: inputs, effectAfter: 0, keyOf: func(k string) map[string]string {
		return map[string]string{e.guard.StorageKey(key): e.guard.StorageKey(k), "ledger#" + key: "ledger#" + k}
	}}
	if tx {
		r.effectAfter = -1
	}
	// Every request must name the message's record: else the replay would
	// write the same item again and again.
	for _, in := range inputs {
		if _, n, err := withKeys(in, r.keyOf(key+"-check")); err != nil || n == 0 {
			return nil, fmt.Errorf("capture: a %T that names no item of the message (%v)", in, err)
		}
	}
	return r, nil
}

// forKey returns the requests of the message with key.
func (r *replay) forKey(key string) ([]any, error) {
	subst := r.keyOf(key)
	out := make([]any, len(r.inputs))
	for i, in := range r.inputs {
		var err error
		if out[i], _, err = withKeys(in, subst); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withKeys copies a request with the string values of its item keys
// replaced as subst says; n counts the replacements. What the request
// shares with the captured one (expressions, values) it only reads.
func withKeys(in any, subst map[string]string) (any, int, error) {
	n := 0
	key := func(m map[string]types.AttributeValue) map[string]types.AttributeValue {
		out := maps.Clone(m)
		for k, v := range m {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				if to, ok := subst[s.Value]; ok {
					out[k] = &types.AttributeValueMemberS{Value: to}
					n++
				}
			}
		}
		return out
	}
	switch in := in.(type) {
	case *dynamodb.UpdateItemInput:
		c := *in
		c.Key = key(in.Key)
		return &c, n, nil
	case *dynamodb.TransactWriteItemsInput:
		c := *in
		// The SDK wrote its token into the captured input; each replay
		// gets its own, as each of the library's transactions did.
		c.ClientRequestToken = nil
		c.TransactItems = make([]types.TransactWriteItem, len(in.TransactItems))
		for i, ti := range in.TransactItems {
			switch {
			case ti.Update != nil:
				u := *ti.Update
				u.Key = key(u.Key)
				ti.Update = &u
			case ti.Put != nil:
				p := *ti.Put
				p.Item = key(p.Item)
				ti.Put = &p
			case ti.ConditionCheck != nil:
				cc := *ti.ConditionCheck
				cc.Key = key(cc.Key)
				ti.ConditionCheck = &cc
			case ti.Delete != nil:
				d := *ti.Delete
				d.Key = key(d.Key)
				ti.Delete = &d
			}
			c.TransactItems[i] = ti
		}
		return &c, n, nil
	}
	return nil, 0, fmt.Errorf("the floor does not replay a %T", in)
}

// send sends one replayed request.
func (e *env) send(ctx context.Context, in any) error {
	var err error
	switch in := in.(type) {
	case *dynamodb.UpdateItemInput:
		_, err = e.client.UpdateItem(ctx, in)
	case *dynamodb.TransactWriteItemsInput:
		_, err = e.client.TransactWriteItems(ctx, in)
	default:
		err = fmt.Errorf("the floor does not replay a %T", in)
	}
	return err
}

// floorMessages builds the messages of every key, before the clock starts.
func floorMessages(r *replay, keys []string) ([]message, error) {
	out := make([]message, len(keys))
	for i, k := range keys {
		reqs, err := r.forKey(k)
		if err != nil {
			return nil, err
		}
		out[i] = message{body: body(k), reqs: reqs}
	}
	return out, nil
}

// sendMessage sends the requests of one message in order, and runs the
// effect where pkg/idem runs it, as an invocation with functionTimeout
// left would.
func (e *env) sendMessage(ctx context.Context, r *replay, m message) error {
	ctx, cancel := invocation(ctx)
	defer cancel()
	for i, in := range m.reqs {
		if err := e.send(ctx, in); err != nil {
			return err
		}
		if i == r.effectAfter {
			if _, err := e.effects.effect(m.body); err != nil {
				return err
			}
		}
	}
	return nil
}
