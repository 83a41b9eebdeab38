package ddbmodel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The expectations of these tables were measured on DynamoDB Local 3.3.1.

type attrs = map[string]types.AttributeValue

func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }
func ns(v ...string) types.AttributeValue { return &types.AttributeValueMemberNS{Value: v} }
func list(v ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: v}
}
func mapv(m attrs) types.AttributeValue { return &types.AttributeValueMemberM{Value: m} }

var (
	boolTrue = &types.AttributeValueMemberBOOL{Value: true}
	null     = &types.AttributeValueMemberNULL{Value: true}
)

// baseItem is the item every case starts from.
func baseItem() attrs {
	return attrs{
		"pk": s("u"), "s": s("abc"), "n": n("5"), "b": b("xyz"), "t": boolTrue, "z": null,
		"ss": ss("a", "b"), "ns": ns("1", "2"), "l": list(s("a"), n("1"), s("c")),
		"m": mapv(attrs{"k": s("v"), "n": n("1"), "mm": mapv(attrs{"x": s("y")})}), "u": s("héllo"),
	}
}

// outcome runs one UpdateItem on the base item and describes its outcome:
// "ok" and the new item, "failed" (condition), or the error's message.
func outcome(t *testing.T, update, cond string, names map[string]string, values attrs, rv types.ReturnValue) (string, string) {
	t.Helper()
	srv := New()
	mustCreate(t, srv, "t", "pk", "")
	ctx := context.Background()
	if _, err := srv.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: baseItem()}); err != nil {
		t.Fatal(err)
	}
	in := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: attrs{"pk": s("u")},
		ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValues: rv}
	if update != "" {
		in.UpdateExpression = aws.String(update)
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	out, err := srv.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	var api smithy.APIError
	switch {
	case err == nil:
		return "ok", render(out.Attributes)
	case errors.As(err, &ccf):
		return "failed", ""
	case errors.As(err, &api):
		return api.ErrorMessage(), ""
	}
	t.Fatalf("UpdateItem: %v", err)
	return "", ""
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		cond   string
		values attrs
		want   string // "ok", "failed", or the start of the message
	}{
		{"mz <> :x", attrs{":x": s("a")}, "ok"}, // a missing attribute is unequal
		{"s <> :x", attrs{":x": n("1")}, "ok"},  // so is another type
		{"s = :x", attrs{":x": n("1")}, "failed"},
		{"s < :x", attrs{":x": n("1")}, "failed"},
		{"NOT mz < :x", attrs{":x": n("1")}, "ok"},
		{"ss < :x", attrs{":x": n("1")}, "failed"},
		{"n < :x", attrs{":x": ss("a")}, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: <, operand type: SS"},
		{"n < :x", attrs{":x": boolTrue}, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: <, operand type: BOOL"},
		{"ss = :x", attrs{":x": ss("b", "a")}, "ok"},
		{"l = :x", attrs{":x": list(s("a"), n("1.0"), s("c"))}, "ok"},
		{"m = :x", attrs{":x": mapv(attrs{"n": n("1"), "k": s("v"), "mm": mapv(attrs{"x": s("y")})})}, "ok"},
		{"z = :x", attrs{":x": null}, "ok"},
		{"b < :x", attrs{":x": b("xz")}, "ok"},
		{"s < :x", attrs{":x": s("abd")}, "ok"},
		{"u < :x", attrs{":x": s("hz")}, "failed"}, // bytewise: é is 0xC3
		{"n = :x", attrs{":x": n("5.00")}, "ok"},
		{"n < :x", attrs{":x": n("1e1")}, "ok"},
		{"n >= :x", attrs{":x": n("5")}, "ok"},
		{"n > :x", attrs{":x": n("5")}, "failed"},
		{"n <= :x", attrs{":x": n("4.99999999999999999999999999999")}, "failed"},
		{"size(n) = :x", attrs{":x": n("1")}, "failed"},
		{"size(mz) <> :x", attrs{":x": n("1")}, "ok"},
		{"size(u) = :x", attrs{":x": n("5")}, "ok"}, // characters, not bytes
		{"size(ss) = :x", attrs{":x": n("2")}, "ok"},
		{"size(m) = :x", attrs{":x": n("3")}, "ok"},
		{"size(l) = :x", attrs{":x": n("3")}, "ok"},
		{"size(b) = :x", attrs{":x": n("3")}, "ok"},
		{"size(:x) = :y", attrs{":x": s("a"), ":y": n("1")}, "ok"},
		{"size(size(n)) = :x", attrs{":x": n("1")}, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size, operand type: N"},
		{"n BETWEEN :x AND :y", attrs{":x": n("6"), ":y": n("1")}, "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {N:6}, upper bound operand: AttributeValue: {N:1}"},
		{"n BETWEEN :x AND :y", attrs{":x": n("1"), ":y": n("6")}, "ok"},
		{"n BETWEEN :x AND :y", attrs{":x": n("5"), ":y": n("5")}, "ok"},
		{"n BETWEEN :x AND :y", attrs{":x": n("1"), ":y": s("6")}, "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:6}"},
		{"n BETWEEN n AND :y", attrs{":y": n("1")}, "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: BETWEEN, first operand: [n]"},
		{"s BETWEEN :x AND :y", attrs{":x": s("a"), ":y": s("b")}, "ok"},
		{"mz BETWEEN :x AND :y", attrs{":x": n("1"), ":y": n("6")}, "failed"},
		{"n IN (:x, :y)", attrs{":x": s("a"), ":y": n("5")}, "ok"},
		{"n IN (:x)", attrs{":x": s("a")}, "failed"},
		{"s IN (s, :x)", attrs{":x": s("a")}, "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: IN, first operand: [s]"},
		{"s = s", nil, "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: =, first operand: [s]"},
		{":x = :x", attrs{":x": s("a")}, "ok"},
		{"begins_with(s, :x)", attrs{":x": n("1")}, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"begins_with(s, :x)", attrs{":x": s("ab")}, "ok"},
		{"begins_with(b, :x)", attrs{":x": b("xy")}, "ok"},
		{"begins_with(s, :x)", attrs{":x": b("ab")}, "failed"},
		{"begins_with(n, :x)", attrs{":x": s("5")}, "failed"},
		{"begins_with(s, s)", nil, "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: begins_with, first operand: [s]"},
		{"contains(ss, :x)", attrs{":x": s("a")}, "ok"},
		{"contains(ss, :x)", attrs{":x": n("1")}, "failed"},
		{"contains(ns, :x)", attrs{":x": n("2.0")}, "ok"},
		{"contains(l, :x)", attrs{":x": n("1")}, "ok"},
		{"contains(s, :x)", attrs{":x": s("bc")}, "ok"},
		{"contains(b, :x)", attrs{":x": b("y")}, "ok"},
		{"contains(s, :x)", attrs{":x": ss("bc")}, "failed"},
		{"contains(n, :x)", attrs{":x": n("5")}, "failed"},
		{"contains(m, :x)", attrs{":x": s("k")}, "failed"},
		{"attribute_type(s, :x)", attrs{":x": s("X")}, "Invalid ConditionExpression: Invalid attribute type name found; type: X, valid types: {N,BS,L,B,NULL,M,S,SS,NS,BOOL}"},
		{"attribute_type(s, :x)", attrs{":x": n("1")}, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"},
		{"attribute_type(s, :x)", attrs{":x": s("S")}, "ok"},
		{"attribute_type(z, :x)", attrs{":x": s("NULL")}, "ok"},
		{"attribute_type(mz, :x)", attrs{":x": s("S")}, "failed"},
		{"attribute_exists(:x)", attrs{":x": s("S")}, "Invalid ConditionExpression: Operator or function requires a document path; operator or function: attribute_exists"},
		{"attribute_exists(m.k)", nil, "ok"},
		{"attribute_exists(m.mm.x)", nil, "ok"},
		{"attribute_exists(l[1])", nil, "ok"},
		{"attribute_exists(l[2])", nil, "ok"},
		{"attribute_exists(l[3])", nil, "failed"},
		{"attribute_exists(m[0])", nil, "failed"},
		{"attribute_not_exists(pk)", nil, "failed"},
		{"attribute_exists  ( n )", nil, "ok"},
		{"n = ", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "= "`},
		{"n = :x AND", attrs{":x": n("5")}, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "AND"`},
		{"(n = :x", attrs{":x": n("5")}, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: ":x"`},
		{"n = :x!", attrs{":x": n("5")}, `Invalid ConditionExpression: Syntax error; token: "!", near: ":x!"`},
		{"l[-1] = :x", attrs{":x": n("5")}, `Invalid ConditionExpression: Syntax error; token: "-", near: "[-1"`},
		{"n IN ()", nil, `Invalid ConditionExpression: Syntax error; token: ")", near: "()"`},
		{"n = :x + :x", attrs{":x": n("5")}, `Invalid ConditionExpression: Syntax error; token: "+", near: ":x + :x"`},
		{"#", nil, `Invalid ConditionExpression: Syntax error; token: "#", near: "#"`},
		{"n = :nope", nil, "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :nope"},
		{"#nope = :x", attrs{":x": n("5")}, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #nope"},
		{"n = :x", attrs{":x": n("5"), ":y": n("1")}, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:y}"},
		{"status = :x", attrs{":x": n("5")}, "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status"},
		{"ATTRIBUTE_EXISTS(n)", nil, "Invalid ConditionExpression: Invalid function name; function: ATTRIBUTE_EXISTS"},
		{"foo(n)", nil, "Invalid ConditionExpression: Invalid function name; function: foo"},
		{"n = if_not_exists(n, :x)", attrs{":x": n("5")}, "Invalid ConditionExpression: The function is not allowed in a condition expression; function: if_not_exists"},
		{"n = :x and s = :y", attrs{":x": n("5"), ":y": s("abc")}, "ok"},
		{"n = :x OR n = :x AND NOT n = :x", attrs{":x": n("5")}, "ok"},
		{"NOT NOT (n = :x)", attrs{":x": n("5")}, "ok"},
		{"((n = :x))", attrs{":x": n("5")}, "Invalid ConditionExpression: The expression has redundant parentheses;"},
		{"NOT ((n = :x))", attrs{":x": n("5")}, "Invalid ConditionExpression: The expression has redundant parentheses;"},
		{"((n = :x) AND (n = :x)) OR (n = :x)", attrs{":x": n("5")}, "ok"},
		{"(attribute_exists (n))", nil, "ok"},
		{"pk.x = :x", attrs{":x": n("5")}, "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: pk"},
		{"m.n = :x", attrs{":x": n("1")}, "ok"},
		{"#a.#b[0] = :x", attrs{":x": s("y")}, "failed"},
	} {
		values := attrs{":one": n("1")}
		for k, v := range tc.values {
			values[k] = v
		}
		var names map[string]string
		if strings.Contains(tc.cond, "#a") {
			names = map[string]string{"#a": "m", "#b": "mm"}
		}
		got, _ := outcome(t, "SET w = :one", tc.cond, names, values, "")
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.cond, got, tc.want)
		}
	}
}

func TestUpdates(t *testing.T) {
	for _, tc := range []struct {
		update string
		values attrs
		rv     types.ReturnValue
		want   string // "ok" or the message
		attrs  string // the attributes returned
	}{
		{"SET a = :x, b = :y", attrs{":x": s("1"), ":y": n("2")}, "UPDATED_NEW", "ok", `{"a":S"1" "b":N2}`},
		{"SET a = :x, a = :y", attrs{":x": s("1"), ":y": n("2")}, "", "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]", ""},
		{"SET m = :x, m.k = :y", attrs{":x": s("1"), ":y": n("2")}, "", "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [m], path two: [m, k]", ""},
		{"SET m.k = :x REMOVE m[0]", attrs{":x": s("1")}, "", "Invalid UpdateExpression: Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [m, k], path two: [m, [0]]", ""},
		{"SET l[0] = :x, l[1] = :y", attrs{":x": s("1"), ":y": n("2")}, "UPDATED_NEW", "ok", `{"l":L[S"1" N2 S"c"]}`},
		{"SET pk = :x", attrs{":x": s("1")}, "", "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key", ""},
		{"REMOVE pk", nil, "", "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key", ""},
		{"SET a = mz", nil, "", msgNoAttribute, ""},
		{"SET a = mz + :x", attrs{":x": n("1")}, "", msgNoAttribute, ""},
		{"SET a = s + :x", attrs{":x": n("1")}, "", msgBadOperand, ""},
		{"SET a = n + :x", attrs{":x": s("1")}, "", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: +, operand type: S", ""},
		{"SET a = if_not_exists(a, :x), n = if_not_exists(n, :x)", attrs{":x": n("7")}, "UPDATED_NEW", "ok", `{"a":N7 "n":N5}`},
		{"SET a = if_not_exists(a, :x) + :x", attrs{":x": n("7")}, "UPDATED_NEW", "ok", `{"a":N14}`},
		{"SET a = if_not_exists(:x, :x)", attrs{":x": n("7")}, "", "Invalid UpdateExpression: Operator or function requires a document path; operator or function: if_not_exists", ""},
		{"SET l = list_append(l, :x), l2 = list_append(:x, l)", attrs{":x": list(n("7"))}, "UPDATED_NEW", "ok", `{"l":L[S"a" N1 S"c" N7] "l2":L[N7 S"a" N1 S"c"]}`},
		{"SET l = list_append(l, :x)", attrs{":x": n("7")}, "", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: list_append, operand type: N", ""},
		{"SET l = list_append(s, :x)", attrs{":x": list(n("7"))}, "", msgBadOperand, ""},
		{"SET mz.a = :x", attrs{":x": n("7")}, "", msgInvalidPath, ""},
		{"SET m.mm.z = :x, m.k = :y", attrs{":x": n("7"), ":y": s("w")}, "UPDATED_NEW", "ok", `{"m":M{"k":S"w" "mm":M{"x":S"y" "z":N7} "n":N1}}`},
		{"SET m.mm.z = :x, m.k = :y", attrs{":x": n("7"), ":y": s("w")}, "UPDATED_OLD", "ok", `{"m":M{"k":S"v" "mm":M{"x":S"y"} "n":N1}}`},
		{"SET l[10] = :x", attrs{":x": n("7")}, "UPDATED_NEW", "ok", ""}, // appended: nothing at l[10]
		{"SET s[0] = :x", attrs{":x": n("7")}, "", msgInvalidPath, ""},
		{"SET s.a = :x", attrs{":x": n("7")}, "", msgInvalidPath, ""},
		{"REMOVE l[0], l[2]", nil, "UPDATED_OLD", "ok", `{"l":L[S"a" N1 S"c"]}`},
		{"REMOVE l[0], l[2]", nil, "UPDATED_NEW", "ok", `{"l":L[N1]}`},
		{"REMOVE l[2], l[0]", nil, "UPDATED_NEW", "ok", `{"l":L[N1]}`},
		{"REMOVE mz, m.zz, l[9]", nil, "UPDATED_OLD", "ok", ""},
		{"REMOVE mz.a", nil, "", msgInvalidPath, ""},
		{"REMOVE s.a", nil, "", msgInvalidPath, ""},
		{"REMOVE l[0], l[1], l[2]", nil, "ALL_NEW", "ok", render(with(baseItem(), "l", list()))},
		{"ADD a :x", attrs{":x": s("7")}, "", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: STRING, typeSet: ALLOWED_FOR_ADD_OPERAND", ""},
		{"ADD a :x", attrs{":x": list()}, "", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: LIST, typeSet: ALLOWED_FOR_ADD_OPERAND", ""},
		{"ADD s :x", attrs{":x": n("7")}, "", msgBadOperand, ""},
		{"ADD ns :x", attrs{":x": ss("7")}, "", msgBadOperand, ""},
		{"ADD m.n :x", attrs{":x": n("7")}, "UPDATED_NEW", "ok", `{"m":M{"k":S"v" "mm":M{"x":S"y"} "n":N8}}`},
		{"ADD n n", nil, "", `Invalid UpdateExpression: Syntax error; token: "n", near: "n n"`, ""},
		{"ADD z2 :x, ns :y", attrs{":x": ss("q"), ":y": ns("3", "2.0")}, "UPDATED_NEW", "ok", `{"ns":NS[1 2 3] "z2":SS["q"]}`},
		{"ADD n :x", attrs{":x": n("-5.5")}, "UPDATED_NEW", "ok", `{"n":N-0.5}`},
		{"DELETE ss :x", attrs{":x": ss("a", "b")}, "UPDATED_OLD", "ok", `{"ss":SS["a" "b"]}`},
		{"DELETE ss :x", attrs{":x": ss("a", "b")}, "UPDATED_NEW", "ok", ""},
		{"DELETE ss :x", attrs{":x": n("1")}, "", "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE, operand type: NUMBER, typeSet: ALLOWED_FOR_DELETE_OPERAND", ""},
		{"DELETE zz :x", attrs{":x": ss("a")}, "UPDATED_NEW", "ok", ""},
		{"DELETE ns :x", attrs{":x": ss("a")}, "", msgBadOperand, ""},
		{"SET a = :x SET b = :x", attrs{":x": n("1")}, "", `Invalid UpdateExpression: The "SET" section can only be used once in an update expression;`, ""},
		{"REMOVE s ADD n :x SET a = :x", attrs{":x": n("1")}, "UPDATED_NEW", "ok", `{"a":N1 "n":N6}`},
		{"set a = :x remove s", attrs{":x": n("1")}, "UPDATED_NEW", "ok", `{"a":N1}`},
		{"SET a = n, n = :x", attrs{":x": n("1")}, "UPDATED_NEW", "ok", `{"a":N5 "n":N1}`},
		{"SET a = n - :x", attrs{":x": n("1")}, "UPDATED_NEW", "ok", `{"a":N4}`},
		{"SET a = n - :x + :x", attrs{":x": n("1")}, "", `Invalid UpdateExpression: Syntax error; token: "+", near: ":x + :x"`, ""},
		{"SET a = size(s)", nil, "", "Invalid UpdateExpression: The function is not allowed in an update expression; function: size", ""},
		{"SET a =", nil, "", `Invalid UpdateExpression: Syntax error; token: "<EOF>", near: "="`, ""},
		{"SET", nil, "", `Invalid UpdateExpression: Syntax error; token: "<EOF>", near: "SET"`, ""},
		{"SET a = :x,", attrs{":x": n("1")}, "", `Invalid UpdateExpression: Syntax error; token: "<EOF>", near: ","`, ""},
		{"FOO a", nil, "", `Invalid UpdateExpression: Syntax error; token: "FOO", near: "FOO a"`, ""},
		{"ADD n :x, n :x", attrs{":x": n("1")}, "", "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [n], path two: [n]", ""},
		{"SET a = :x", attrs{":x": ss()}, "", "ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: An string set  may not be empty for key :x", ""},
		{"SET a = :x", attrs{":x": ss("a", "a")}, "", "ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: Input collection [a, a] contains duplicates for key :x", ""},
		{"SET a = :x", attrs{":x": n("1.5x")}, "", "ExpressionAttributeValues contains invalid value: A value provided cannot be converted into a number for key :x", ""},
		{"SET a = :x, b = :y", attrs{":x": n("1.50"), ":y": ns("10", "9", "2.0")}, "UPDATED_NEW", "ok", `{"a":N1.5 "b":NS[2 9 10]}`},
		{"SET a = :x + :y", attrs{":x": n("1e125"), ":y": n("9.99e125")}, "", msgOverflow, ""},
		{"SET a = :x", attrs{":x": n("1")}, "ALL_OLD", "ok", render(baseItem())},
		{"SET a = :x", attrs{":x": n("1")}, "WHATEVER", "Return values set to invalid value", ""},
	} {
		got, returned := outcome(t, tc.update, "", nil, tc.values, tc.rv)
		if got != tc.want || returned != tc.attrs {
			t.Errorf("%s (%s): %s %s\n\twant %s %s", tc.update, tc.rv, got, returned, tc.want, tc.attrs)
		}
	}
}

func with(it attrs, name string, v types.AttributeValue) attrs {
	it[name] = v
	return it
}

func TestExpressionMaps(t *testing.T) {
	for _, tc := range []struct {
		update string
		names  map[string]string
		values attrs
		want   string
	}{
		{"SET a = :x", map[string]string{"#a": "a"}, attrs{":x": n("1")}, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a}"},
		{"SET a = :x", map[string]string{}, attrs{":x": n("1")}, "ExpressionAttributeNames must not be empty"},
		{"REMOVE a", nil, attrs{}, "ExpressionAttributeValues must not be empty"},
		{"SET #p = :x, #a = :x", map[string]string{"#p": "b", "#a": "b"}, attrs{":x": n("1")}, "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [b], path two: [b]"},
		{"SET #p = :x", map[string]string{"#p": ""}, attrs{":x": n("1")}, "ExpressionAttributeNames contains invalid value: Empty attribute name for key #p"},
		{"SET #p = :x", map[string]string{"p": "a"}, attrs{":x": n("1")}, `ExpressionAttributeNames contains invalid key: Syntax error; key: "p"`},
		{"SET a = x", nil, attrs{"x": n("1")}, `ExpressionAttributeValues contains invalid key: Syntax error; key: "x"`},
		{"SET #p = :x", map[string]string{"#p": "a.b"}, attrs{":x": n("1")}, "ok"},
		{"SET a = :x, #s = :x", map[string]string{"#s": "status", "#u": "u", "#v": "v"}, attrs{":x": n("1"), ":y": n("1")}, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#u, #v}"},
	} {
		if got, _ := outcome(t, tc.update, "", tc.names, tc.values, ""); got != tc.want {
			t.Errorf("%s %v %v: %s, want %s", tc.update, tc.names, tc.values, got, tc.want)
		}
	}
}
