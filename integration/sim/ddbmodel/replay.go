package ddbmodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// Client is what Replay sends requests to: *dynamodb.Client implements it,
// and so does *Server.
type Client interface {
	dynamostore.API
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ Client = (*Server)(nil)

// Mismatch is a reply of the replayed server that differs from the
// recorded one.
type Mismatch struct {
	Index     int // of the call in the recording
	Op        string
	Request   string // the request, rendered
	Want, Got string // the two replies, normalised
}

func (m Mismatch) String() string {
	return fmt.Sprintf("call %d %s %s:\n\twant %s\n\tgot  %s", m.Index, m.Op, m.Request, m.Want, m.Got)
}

// Replay sends the requests of calls, in order, to api (typically
// DynamoDB Local with the same tables, empty, to check a recording of the
// model) and compares each reply with the recorded one, as Equivalent
// does. It stops when ctx ends.
func Replay(ctx context.Context, calls []Call, api Client) []Mismatch {
	var out []Mismatch
	for i, want := range calls {
		if ctx.Err() != nil {
			break
		}
		got := Send(ctx, api, want.Op, want.Input)
		if !Equivalent(want, got) {
			out = append(out, Mismatch{Index: i, Op: want.Op, Request: describeInput(want.Input), Want: normalize(want).String(), Got: normalize(got).String()})
		}
	}
	return out
}

// Send sends one request (the input of one of Client's methods) to api and
// returns it as a Call. It sends a copy of the input: the SDK writes a
// ClientRequestToken into a TransactWriteItemsInput without one, and a
// recording replayed twice must not carry the first replay's token.
func Send(ctx context.Context, api Client, op string, input any) Call {
	c := Call{Op: op, Input: input}
	switch in := input.(type) {
	case *dynamodb.UpdateItemInput:
		cp := *in
		out, err := api.UpdateItem(ctx, &cp)
		c.Output, c.Err = nilIfErr(out, err), err
	case *dynamodb.GetItemInput:
		cp := *in
		out, err := api.GetItem(ctx, &cp)
		c.Output, c.Err = nilIfErr(out, err), err
	case *dynamodb.TransactWriteItemsInput:
		cp := *in
		out, err := api.TransactWriteItems(ctx, &cp)
		c.Output, c.Err = nilIfErr(out, err), err
	case *dynamodb.PutItemInput:
		cp := *in
		out, err := api.PutItem(ctx, &cp)
		c.Output, c.Err = nilIfErr(out, err), err
	case *dynamodb.DeleteItemInput:
		cp := *in
		out, err := api.DeleteItem(ctx, &cp)
		c.Output, c.Err = nilIfErr(out, err), err
	default:
		c.Err = fmt.Errorf("ddbmodel: cannot send a %T", input)
	}
	return c
}

// nilIfErr keeps a typed nil output out of an interface.
func nilIfErr[T any](out *T, err error) any {
	if err != nil || out == nil {
		return nil
	}
	return out
}

// Equivalent reports whether two replies to one request agree, as far as
// DynamoDB's contract goes and the model can tell:
//
//   - attribute maps exactly, but numbers by value and sets as sets:
//     DynamoDB normalises numbers and returns sets in any order, while
//     DynamoDB Local keeps the text of numbers written by UpdateItem or
//     nested in lists and maps (and adds 1.5 and 1.5 to "3.0");
//   - errors by type and code, ConditionalCheckFailed by the item it
//     carries, cancellations by their reasons' codes and items, messages
//     once their known variations are normalised (a trailing period, the
//     order of unused keys, where a syntax error is, which paths overlap);
//   - a cancellation with a ValidationError reason is equivalent to a
//     ValidationException with that reason's message, and to a
//     cancellation with that reason alone: DynamoDB cancels a transaction
//     whose item would grow too large or whose update fails on the item,
//     one reason per action (the model does too), where DynamoDB Local
//     refuses the whole request, or (for an update of a key attribute)
//     lists only the failing action.
func Equivalent(a, b Call) bool {
	x, y := normalize(a), normalize(b)
	return x.equal(y) || x.validationAsReason(y) || y.validationAsReason(x)
}

// apiCode is the error code of err, or "" for a non-API error.
func apiCode(err error) (code, msg string) {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode(), api.ErrorMessage()
	}
	return "", ""
}
