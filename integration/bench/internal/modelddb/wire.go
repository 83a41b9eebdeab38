package modelddb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// DynamoDB's JSON protocol (awsJson1_0) for the requests the stores send:
// the request bodies into the SDK's input types, the model's outputs and
// errors into the bodies DynamoDB answers with. A field this codec does
// not know fails the request (decode uses DisallowUnknownFields): a store
// sending something new is refused, not answered half right.

// request is every field of the operations served; each operation reads
// its own.
type request struct {
	TableName                           *string
	Key                                 map[string]value
	Item                                map[string]value
	UpdateExpression                    *string
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]value
	ReturnValues                        types.ReturnValue
	ReturnValuesOnConditionCheckFailure types.ReturnValuesOnConditionCheckFailure
	ConsistentRead                      *bool
	// Accepted and ignored: the model has no capacity or collections.
	ReturnConsumedCapacity      string
	ReturnItemCollectionMetrics string
	TransactItems               []struct {
		ConditionCheck, Put, Delete, Update *request
	}
	ClientRequestToken *string
}

func decodeRequest(body []byte) (*request, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r request
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// call decodes the request of op and runs it on api.
func call(ctx context.Context, api model, op string, r *request) (any, error) {
	switch op {
	case "UpdateItem":
		key, err := decodeItem(r.Key)
		if err != nil {
			return nil, err
		}
		values, err := decodeItem(r.ExpressionAttributeValues)
		if err != nil {
			return nil, err
		}
		out, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: r.TableName, Key: key, UpdateExpression: r.UpdateExpression, ConditionExpression: r.ConditionExpression,
			ExpressionAttributeNames: r.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValues: r.ReturnValues, ReturnValuesOnConditionCheckFailure: r.ReturnValuesOnConditionCheckFailure,
		})
		if err != nil {
			return nil, err
		}
		return withItem("Attributes", out.Attributes), nil
	case "PutItem":
		it, err := decodeItem(r.Item)
		if err != nil {
			return nil, err
		}
		values, err := decodeItem(r.ExpressionAttributeValues)
		if err != nil {
			return nil, err
		}
		out, err := api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: r.TableName, Item: it, ConditionExpression: r.ConditionExpression,
			ExpressionAttributeNames: r.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValues: r.ReturnValues, ReturnValuesOnConditionCheckFailure: r.ReturnValuesOnConditionCheckFailure,
		})
		if err != nil {
			return nil, err
		}
		return withItem("Attributes", out.Attributes), nil
	case "DeleteItem":
		key, err := decodeItem(r.Key)
		if err != nil {
			return nil, err
		}
		values, err := decodeItem(r.ExpressionAttributeValues)
		if err != nil {
			return nil, err
		}
		out, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: r.TableName, Key: key, ConditionExpression: r.ConditionExpression,
			ExpressionAttributeNames: r.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValues: r.ReturnValues, ReturnValuesOnConditionCheckFailure: r.ReturnValuesOnConditionCheckFailure,
		})
		if err != nil {
			return nil, err
		}
		return withItem("Attributes", out.Attributes), nil
	case "GetItem":
		key, err := decodeItem(r.Key)
		if err != nil {
			return nil, err
		}
		if len(r.ExpressionAttributeNames) > 0 {
			return nil, fmt.Errorf("%w: GetItem with ExpressionAttributeNames (a projection)", errNotServed)
		}
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.TableName, Key: key, ConsistentRead: r.ConsistentRead})
		if err != nil {
			return nil, err
		}
		return withItem("Item", out.Item), nil
	case "TransactWriteItems":
		in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: r.ClientRequestToken}
		for _, ti := range r.TransactItems {
			item, err := transactItem(ti.ConditionCheck, ti.Put, ti.Delete, ti.Update)
			if err != nil {
				return nil, err
			}
			in.TransactItems = append(in.TransactItems, item)
		}
		if _, err := api.TransactWriteItems(ctx, in); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("%w: operation %q", errNotServed, op)
}

func transactItem(check, put, del, upd *request) (types.TransactWriteItem, error) {
	var out types.TransactWriteItem
	n := 0
	for _, r := range []*request{check, put, del, upd} {
		if r != nil {
			n++
		}
	}
	if n != 1 {
		return out, fmt.Errorf("%w: a transaction item with %d actions", errNotServed, n)
	}
	pick := func(r *request) (key, it, values map[string]types.AttributeValue, err error) {
		if key, err = decodeItem(r.Key); err != nil {
			return
		}
		if it, err = decodeItem(r.Item); err != nil {
			return
		}
		values, err = decodeItem(r.ExpressionAttributeValues)
		return
	}
	switch {
	case check != nil:
		key, _, values, err := pick(check)
		out.ConditionCheck = &types.ConditionCheck{TableName: check.TableName, Key: key, ConditionExpression: check.ConditionExpression,
			ExpressionAttributeNames: check.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: check.ReturnValuesOnConditionCheckFailure}
		return out, err
	case put != nil:
		_, it, values, err := pick(put)
		out.Put = &types.Put{TableName: put.TableName, Item: it, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: put.ReturnValuesOnConditionCheckFailure}
		return out, err
	case del != nil:
		key, _, values, err := pick(del)
		out.Delete = &types.Delete{TableName: del.TableName, Key: key, ConditionExpression: del.ConditionExpression,
			ExpressionAttributeNames: del.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: del.ReturnValuesOnConditionCheckFailure}
		return out, err
	default:
		key, _, values, err := pick(upd)
		out.Update = &types.Update{TableName: upd.TableName, Key: key, UpdateExpression: upd.UpdateExpression,
			ConditionExpression: upd.ConditionExpression, ExpressionAttributeNames: upd.ExpressionAttributeNames,
			ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: upd.ReturnValuesOnConditionCheckFailure}
		return out, err
	}
}

// withItem is a response holding one item under name, or nothing.
func withItem(name string, it map[string]types.AttributeValue) map[string]any {
	if it == nil {
		return map[string]any{}
	}
	return map[string]any{name: encodeItem(it)}
}

// errNotServed: a request this server does not answer (an operation, or a
// part of one, that the stores do not send).
var errNotServed = errors.New("modelddb: not served")

// Error types, as DynamoDB names them in __type.
const (
	typePrefix     = "com.amazonaws.dynamodb.v20120810#"
	typeValidation = "com.amazon.coral.validate#ValidationException"
)

// errorBody is the status and body DynamoDB answers an error with.
func errorBody(err error) (int, map[string]any) {
	var (
		ccf      *types.ConditionalCheckFailedException
		canceled *types.TransactionCanceledException
		notFound *types.ResourceNotFoundException
		api      smithy.APIError
	)
	switch {
	case errors.As(err, &ccf):
		b := map[string]any{"__type": typePrefix + "ConditionalCheckFailedException", "message": aws.ToString(ccf.Message)}
		if ccf.Item != nil {
			b["Item"] = encodeItem(ccf.Item)
		}
		return 400, b
	case errors.As(err, &canceled):
		reasons := make([]map[string]any, len(canceled.CancellationReasons))
		for i, r := range canceled.CancellationReasons {
			m := map[string]any{"Code": aws.ToString(r.Code)}
			if r.Message != nil {
				m["Message"] = *r.Message
			}
			if r.Item != nil {
				m["Item"] = encodeItem(r.Item)
			}
			reasons[i] = m
		}
		return 400, map[string]any{"__type": typePrefix + "TransactionCanceledException",
			"Message": aws.ToString(canceled.Message), "CancellationReasons": reasons}
	case errors.As(err, &notFound):
		return 400, map[string]any{"__type": typePrefix + "ResourceNotFoundException", "message": aws.ToString(notFound.Message)}
	case errors.As(err, &api) && api.ErrorCode() == "ValidationException":
		return 400, map[string]any{"__type": typeValidation, "message": api.ErrorMessage()}
	case errors.As(err, &api):
		return 400, map[string]any{"__type": typePrefix + api.ErrorCode(), "message": api.ErrorMessage()}
	}
	// Not served, not modelled, or a body that does not parse: refused as
	// invalid (a 400 the SDKs do not retry), the reason in the message.
	return 400, map[string]any{"__type": typeValidation, "message": err.Error()}
}

// Attribute values: {"S": "..."}, {"N": "..."}, {"B": base64}, {"BOOL": b},
// {"NULL": true}, {"M": {...}}, {"L": [...]}, {"SS"|"NS"|"BS": [...]},
// decoded in one pass into value, whose one set field is the type.
type value struct {
	S, N   *string
	B      []byte
	BOOL   *bool
	NULL   *bool
	M      map[string]value // {} decodes to an empty map, not nil
	L      []value          // [] to an empty slice
	SS, NS []string
	BS     [][]byte
}

func decodeItem(m map[string]value) (map[string]types.AttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		av, err := v.attributeValue()
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

// attributeValue is v as the SDK's type; a value with other than one type
// set is refused.
func (v value) attributeValue() (types.AttributeValue, error) {
	var out []types.AttributeValue
	if v.S != nil {
		out = append(out, &types.AttributeValueMemberS{Value: *v.S})
	}
	if v.N != nil {
		out = append(out, &types.AttributeValueMemberN{Value: *v.N})
	}
	if v.B != nil {
		out = append(out, &types.AttributeValueMemberB{Value: v.B})
	}
	if v.BOOL != nil {
		out = append(out, &types.AttributeValueMemberBOOL{Value: *v.BOOL})
	}
	if v.NULL != nil {
		out = append(out, &types.AttributeValueMemberNULL{Value: *v.NULL})
	}
	if v.SS != nil {
		out = append(out, &types.AttributeValueMemberSS{Value: v.SS})
	}
	if v.NS != nil {
		out = append(out, &types.AttributeValueMemberNS{Value: v.NS})
	}
	if v.BS != nil {
		out = append(out, &types.AttributeValueMemberBS{Value: v.BS})
	}
	if v.M != nil {
		it, err := decodeItem(v.M)
		if err != nil {
			return nil, err
		}
		if it == nil {
			it = map[string]types.AttributeValue{}
		}
		out = append(out, &types.AttributeValueMemberM{Value: it})
	}
	if v.L != nil {
		l := make([]types.AttributeValue, len(v.L))
		for i, e := range v.L {
			var err error
			if l[i], err = e.attributeValue(); err != nil {
				return nil, err
			}
		}
		out = append(out, &types.AttributeValueMemberL{Value: l})
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("an attribute value with %d types", len(out))
	}
	return out[0], nil
}

func encodeItem(it map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(it))
	for k, v := range it {
		out[k] = encodeValue(v)
	}
	return out
}

func encodeValue(v types.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value} // encoding/json: base64
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": encodeItem(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = encodeValue(e)
		}
		return map[string]any{"L": l}
	}
	panic(fmt.Sprintf("modelddb: attribute value %T", v))
}
