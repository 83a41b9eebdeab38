package ddbmodel

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute values are the SDK's types. A value the model holds is its own
// (copied in by ingest, copied out by clone) and never changed: an update
// builds new containers along the path it changes and shares the rest.

type (
	av   = types.AttributeValue
	item = map[string]types.AttributeValue
)

// clone returns a deep copy of a value in the model's form: of a value the
// model holds, for a caller; of a request's value, to hold it.
func clone(v av) av {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: bytes.Clone(nonNil(v.Value))}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberBS:
		s := make([][]byte, len(v.Value))
		for i, m := range v.Value {
			s[i] = bytes.Clone(nonNil(m))
		}
		return &types.AttributeValueMemberBS{Value: s}
	case *types.AttributeValueMemberL:
		l := make([]av, len(v.Value))
		for i, e := range v.Value {
			l[i] = clone(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: cloneItem(v.Value)}
	}
	return nil
}

// cloneItem deep-copies an item for a caller; nil stays nil (no item).
func cloneItem(m item) item {
	if m == nil {
		return nil
	}
	out := make(item, len(m))
	for k, v := range m {
		out[k] = clone(v)
	}
	return out
}

// equal reports whether two values the model holds are equal: same type
// and value, sets as sets (they are kept sorted), lists in order.
func equal(a, b av) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && slices.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && slices.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && slices.EqualFunc(a.Value, b.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(a.Value, b.Value, equal)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && equalItems(a.Value, b.Value)
	}
	return false
}

func equalItems(a, b item) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !equal(v, w) {
			return false
		}
	}
	return true
}

// typeName is DynamoDB's short name of a value's type, as attribute_type
// takes it and as condition errors name it.
func typeName(v av) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return ""
}

// longTypeNames are the names ADD and DELETE errors use.
var longTypeNames = map[string]string{
	"S": "STRING", "N": "NUMBER", "B": "BINARY", "BOOL": "BOOLEAN", "NULL": "NULL",
	"SS": "STRING_SET", "NS": "NUMBER_SET", "BS": "BINARY_SET", "L": "LIST", "M": "MAP",
}

// isScalar reports whether v is of a type the ordering comparators take.
func isScalar(v av) bool {
	switch v.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberN, *types.AttributeValueMemberB:
		return true
	}
	return false
}

// compareScalars orders two values of the same scalar type: numbers
// numerically, strings and binaries bytewise. ok is false for other types
// or different types, which no ordering comparison is true of.
func compareScalars(a, b av) (c int, ok bool) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			return compareNumbers(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberB:
		if b, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(a.Value, b.Value), true
		}
	}
	return 0, false
}

// describe renders a value as DynamoDB's BETWEEN errors do: {N:6}.
func describe(v av) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "{S:" + v.Value + "}"
	case *types.AttributeValueMemberN:
		return "{N:" + v.Value + "}"
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("{B:%x}", v.Value)
	}
	return "{" + typeName(v) + "}"
}
