package ddbmodel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Errors are shaped as the SDK returns DynamoDB's: a *smithy.OperationError
// around the typed error of types (ConditionalCheckFailedException,
// TransactionCanceledException, ResourceNotFoundException), or around a
// *smithy.GenericAPIError with code ValidationException, so that errors.As
// finds them exactly as with the real client. (The SDK also puts an HTTP
// response error between the two; nothing in this project looks at it.)

// ErrNotModelled is wrapped by the error of a request that uses a part of
// the API the model does not implement (see the package documentation).
var ErrNotModelled = errors.New("ddbmodel: not modelled")

// Messages DynamoDB Local sends with these errors.
const (
	msgConditionFailed = "The conditional request failed"
	msgNoTable         = "Cannot do operations on a non-existent table"
	msgTxCanceled      = "Transaction cancelled, please refer cancellation reasons for specific reasons "
)

func validation(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg}
}

func notModelled(what string) error {
	return fmt.Errorf("%w: %s", ErrNotModelled, what)
}

func operationError(op string, err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: err}
}

// conditionFailed is the failed condition of a single-item write; it
// carries the item that failed it when the request asked for ALL_OLD.
func conditionFailed(old item, returnOld types.ReturnValuesOnConditionCheckFailure) error {
	e := &types.ConditionalCheckFailedException{Message: aws.String(msgConditionFailed)}
	if returnOld == types.ReturnValuesOnConditionCheckFailureAllOld {
		e.Item = cloneItem(old)
	}
	return e
}

func noTable() error {
	return &types.ResourceNotFoundException{Message: aws.String(msgNoTable)}
}

// canceled is a cancelled transaction: one reason per action, in order.
func canceled(reasons []types.CancellationReason) error {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	return &types.TransactionCanceledException{
		Message:             aws.String(msgTxCanceled + "[" + strings.Join(codes, ", ") + "]"),
		CancellationReasons: reasons,
	}
}
