package ddbmodel

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// reply is a reply in the form Equivalent compares: attribute maps
// rendered with numbers canonical and sets sorted, error messages with
// their known variations removed.
type reply struct {
	attrs   string // Attributes or Item; "" for none
	code    string // error code, "error" for a non-API error; "" for success
	msg     string
	item    string // of a ConditionalCheckFailedException
	reasons []reason
}

type reason struct{ code, msg, item string }

func normalize(c Call) reply {
	var r reply
	switch out := c.Output.(type) {
	case *dynamodb.UpdateItemOutput:
		r.attrs = render(out.Attributes)
	case *dynamodb.PutItemOutput:
		r.attrs = render(out.Attributes)
	case *dynamodb.DeleteItemOutput:
		r.attrs = render(out.Attributes)
	case *dynamodb.GetItemOutput:
		r.attrs = render(out.Item)
	}
	if c.Err == nil {
		return r
	}
	code, msg := apiCode(c.Err)
	if code == "" {
		code, msg = "error", c.Err.Error()
	}
	r.code, r.msg = code, normalizeMessage(msg)
	var ccf *types.ConditionalCheckFailedException
	var tc *types.TransactionCanceledException
	switch {
	case errors.As(c.Err, &ccf):
		r.item = render(ccf.Item)
	case errors.As(c.Err, &tc):
		for _, cr := range tc.CancellationReasons {
			r.reasons = append(r.reasons, reason{aws.ToString(cr.Code), normalizeMessage(aws.ToString(cr.Message)), render(cr.Item)})
		}
	}
	return r
}

func (r reply) equal(o reply) bool {
	return r.attrs == o.attrs && r.code == o.code && r.msg == o.msg && r.item == o.item && slices.Equal(r.reasons, o.reasons)
}

// validationAsReason reports whether r cancels a transaction for a
// ValidationError whose message is that of o: a ValidationException, or a
// cancellation with that reason alone.
func (r reply) validationAsReason(o reply) bool {
	if r.code != "TransactionCanceledException" {
		return false
	}
	msg := o.msg
	switch {
	case o.code == "ValidationException":
	case o.code == "TransactionCanceledException" && len(o.reasons) == 1 && o.reasons[0].code == "ValidationError":
		msg = o.reasons[0].msg
	default:
		return false
	}
	return slices.ContainsFunc(r.reasons, func(x reason) bool { return x.code == "ValidationError" && x.msg == msg })
}

func (r reply) String() string {
	if r.code == "" {
		return "ok " + r.attrs
	}
	s := fmt.Sprintf("%s %q", r.code, r.msg)
	if r.item != "" {
		s += " item " + r.item
	}
	for _, x := range r.reasons {
		s += fmt.Sprintf(" [%s %q %s]", x.code, x.msg, x.item)
	}
	return s
}

// normalizeMessage removes what legitimately varies in a message: a
// trailing period (DynamoDB Local ends some with one), the order of the
// keys listed as unused (DynamoDB Local's hash order; the model sorts),
// where a syntax error was found, which paths overlap (DynamoDB Local may
// name a path that is not one of the two), and which of an update's
// failing actions is reported: when several fail, DynamoDB Local reports
// one in an order of its own (seemingly a hash order of the attribute
// names), the model the first. So a missing operand, one of the wrong type
// and a path that cannot be written are one error here, and an operand of
// the wrong type is not named.
func normalizeMessage(msg string) string {
	msg = strings.TrimSuffix(msg, ".")
	switch msg {
	case msgNoAttribute, msgBadOperand, msgInvalidPath:
		return "The update cannot be applied to the item"
	}
	for _, cut := range []string{"Syntax error;", "must remove or rewrite one of these paths;", "Incorrect operand type for operator or function;"} {
		if i := strings.Index(msg, cut); i >= 0 {
			return msg[:i+len(cut)]
		}
	}
	if i := strings.Index(msg, "keys: {"); i >= 0 && strings.HasSuffix(msg, "}") {
		keys := strings.Split(msg[i+len("keys: {"):len(msg)-1], ", ")
		slices.Sort(keys)
		return msg[:i] + "keys: {" + strings.Join(keys, ", ") + "}"
	}
	return msg
}

// render writes an attribute map in a canonical text: keys sorted,
// numbers canonical, sets sorted; "" for no map or an empty one.
func render(m map[string]types.AttributeValue) string {
	if len(m) == 0 {
		return ""
	}
	var b strings.Builder
	renderMap(&b, m)
	return b.String()
}

func renderMap(b *strings.Builder, m map[string]types.AttributeValue) {
	b.WriteByte('{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(b, "%q:", k)
		renderValue(b, m[k])
	}
	b.WriteByte('}')
}

func renderValue(b *strings.Builder, v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		fmt.Fprintf(b, "S%q", v.Value)
	case *types.AttributeValueMemberN:
		b.WriteString("N" + number(v.Value))
	case *types.AttributeValueMemberB:
		fmt.Fprintf(b, "B%x", v.Value)
	case *types.AttributeValueMemberBOOL:
		fmt.Fprintf(b, "BOOL%v", v.Value)
	case *types.AttributeValueMemberNULL:
		b.WriteString("NULL")
	case *types.AttributeValueMemberSS:
		s := slices.Clone(v.Value)
		slices.Sort(s)
		fmt.Fprintf(b, "SS%q", s)
	case *types.AttributeValueMemberNS:
		s := make([]string, len(v.Value))
		for i, n := range v.Value {
			s[i] = number(n)
		}
		slices.SortFunc(s, compareNumbers)
		fmt.Fprintf(b, "NS%v", s)
	case *types.AttributeValueMemberBS:
		s := make([]string, len(v.Value))
		for i, m := range v.Value {
			s[i] = fmt.Sprintf("%x", m)
		}
		slices.Sort(s)
		fmt.Fprintf(b, "BS%v", s)
	case *types.AttributeValueMemberL:
		b.WriteString("L[")
		for i, e := range v.Value {
			if i > 0 {
				b.WriteByte(' ')
			}
			renderValue(b, e)
		}
		b.WriteByte(']')
	case *types.AttributeValueMemberM:
		b.WriteByte('M')
		renderMap(b, v.Value)
	default:
		fmt.Fprintf(b, "%T", v)
	}
}

// number is the canonical text of a number, or the text itself when it is
// none (a reply should not hold such a thing, and then it shows).
func number(s string) string {
	if n, msg := canonicalNumber(s); msg == "" {
		return n
	}
	return s
}

// describeInput renders a request for a report.
func describeInput(input any) string {
	var b strings.Builder
	switch in := input.(type) {
	case *dynamodb.UpdateItemInput:
		fmt.Fprintf(&b, "%s key %s", aws.ToString(in.TableName), render(in.Key))
		describeExpr(&b, in.UpdateExpression, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		fmt.Fprintf(&b, " return %q on failure %q", in.ReturnValues, in.ReturnValuesOnConditionCheckFailure)
	case *dynamodb.PutItemInput:
		fmt.Fprintf(&b, "%s item %s", aws.ToString(in.TableName), render(in.Item))
		describeExpr(&b, nil, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		fmt.Fprintf(&b, " return %q on failure %q", in.ReturnValues, in.ReturnValuesOnConditionCheckFailure)
	case *dynamodb.DeleteItemInput:
		fmt.Fprintf(&b, "%s key %s", aws.ToString(in.TableName), render(in.Key))
		describeExpr(&b, nil, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		fmt.Fprintf(&b, " return %q on failure %q", in.ReturnValues, in.ReturnValuesOnConditionCheckFailure)
	case *dynamodb.GetItemInput:
		fmt.Fprintf(&b, "%s key %s", aws.ToString(in.TableName), render(in.Key))
	case *dynamodb.TransactWriteItemsInput:
		b.WriteString(txFingerprint(in))
	default:
		fmt.Fprintf(&b, "%T", input)
	}
	return b.String()
}

func describeExpr(b *strings.Builder, update, cond *string, names map[string]string, values map[string]types.AttributeValue) {
	if update != nil {
		fmt.Fprintf(b, " update %q", *update)
	}
	if cond != nil {
		fmt.Fprintf(b, " condition %q", *cond)
	}
	if names != nil {
		fmt.Fprintf(b, " names %v", names)
	}
	if values != nil {
		fmt.Fprintf(b, " values %s", render(values))
	}
}

// Render is item in a canonical text, numbers by value and sets sorted, so
// that items of the model and of DynamoDB (Local) compare as DynamoDB's
// contract does.
func Render(item map[string]types.AttributeValue) string { return render(item) }
