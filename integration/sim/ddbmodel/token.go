package ddbmodel

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// A TransactWriteItems with a ClientRequestToken is idempotent: once one
// succeeded, the same request with the same token succeeds again without
// applying anything, and another request with that token fails with
// IdempotentParameterMismatchException; a cancelled one leaves the token
// unused (measured with DynamoDB Local). This matters because the SDK
// fills in a random token when the request has none, on the caller's
// input, so that the SDK's retries, and dynamostore's (which resend the
// same input), carry the same token.
//
// DynamoDB forgets a token 10 minutes after its request; the model has no
// clock and never forgets.

// txFingerprint renders what makes two requests the same request.
func txFingerprint(in *dynamodb.TransactWriteItemsInput) string {
	var b strings.Builder
	for _, ti := range in.TransactItems {
		if c := ti.ConditionCheck; c != nil {
			fmt.Fprintf(&b, "check %q %s", aws.ToString(c.TableName), render(c.Key))
			fingerprintExpr(&b, c.ConditionExpression, nil, c.ExpressionAttributeNames, c.ExpressionAttributeValues, string(c.ReturnValuesOnConditionCheckFailure))
		}
		if p := ti.Put; p != nil {
			fmt.Fprintf(&b, "put %q %s", aws.ToString(p.TableName), render(p.Item))
			fingerprintExpr(&b, p.ConditionExpression, nil, p.ExpressionAttributeNames, p.ExpressionAttributeValues, string(p.ReturnValuesOnConditionCheckFailure))
		}
		if d := ti.Delete; d != nil {
			fmt.Fprintf(&b, "delete %q %s", aws.ToString(d.TableName), render(d.Key))
			fingerprintExpr(&b, d.ConditionExpression, nil, d.ExpressionAttributeNames, d.ExpressionAttributeValues, string(d.ReturnValuesOnConditionCheckFailure))
		}
		if u := ti.Update; u != nil {
			fmt.Fprintf(&b, "update %q %s", aws.ToString(u.TableName), render(u.Key))
			fingerprintExpr(&b, u.ConditionExpression, u.UpdateExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues, string(u.ReturnValuesOnConditionCheckFailure))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func fingerprintExpr(b *strings.Builder, cond, update *string, names map[string]string, values map[string]av, onFailure string) {
	fmt.Fprintf(b, " cond %q update %q names", aws.ToString(cond), aws.ToString(update))
	for _, k := range sortedKeys(names) {
		fmt.Fprintf(b, " %q=%q", k, names[k])
	}
	fmt.Fprintf(b, " values %s on failure %q", render(values), onFailure)
}
