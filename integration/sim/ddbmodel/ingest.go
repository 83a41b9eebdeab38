package ddbmodel

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Values coming in: a request's values are validated as DynamoDB does and
// put in the model's form (numbers canonical, sets sorted) before anything
// else happens.

// ingest returns a copy of v as the model keeps it, numbers in canonical
// form and set members sorted, or DynamoDB's message for a value it
// refuses.
func ingest(v av) (av, string) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}, ""
	case *types.AttributeValueMemberN:
		n, msg := canonicalNumber(v.Value)
		if msg != "" {
			return nil, msg
		}
		return &types.AttributeValueMemberN{Value: n}, ""
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: bytes.Clone(nonNil(v.Value))}, ""
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}, ""
	case *types.AttributeValueMemberNULL:
		if !v.Value {
			return nil, "One or more parameter values were invalid: Null attribute value types must have the value of true"
		}
		return &types.AttributeValueMemberNULL{Value: true}, ""
	case *types.AttributeValueMemberSS:
		return ingestStrings(v.Value)
	case *types.AttributeValueMemberNS:
		return ingestNumbers(v.Value)
	case *types.AttributeValueMemberBS:
		return ingestBinaries(v.Value)
	case *types.AttributeValueMemberL:
		l := make([]av, len(v.Value))
		for i, e := range v.Value {
			c, msg := ingest(e)
			if msg != "" {
				return nil, msg
			}
			l[i] = c
		}
		return &types.AttributeValueMemberL{Value: l}, ""
	case *types.AttributeValueMemberM:
		m, msg := ingestItem(v.Value)
		if msg != "" {
			return nil, msg
		}
		return &types.AttributeValueMemberM{Value: m}, ""
	}
	return nil, "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
}

// ingestItem copies a map of attributes (an item, or an M value).
func ingestItem(m item) (item, string) {
	out := make(item, len(m))
	for k, v := range m {
		if k == "" {
			return nil, "Empty attribute name"
		}
		c, msg := ingest(v)
		if msg != "" {
			return nil, msg
		}
		out[k] = c
	}
	return out, ""
}

func ingestStrings(members []string) (av, string) {
	if len(members) == 0 {
		return nil, "One or more parameter values were invalid: An string set  may not be empty"
	}
	s := slices.Clone(members)
	slices.Sort(s)
	if hasDup(s, func(a, b string) bool { return a == b }) {
		return nil, fmt.Sprintf("One or more parameter values were invalid: Input collection [%s] contains duplicates", strings.Join(members, ", "))
	}
	return &types.AttributeValueMemberSS{Value: s}, ""
}

func ingestNumbers(members []string) (av, string) {
	if len(members) == 0 {
		return nil, "One or more parameter values were invalid: An number set  may not be empty"
	}
	s := make([]string, len(members))
	for i, m := range members {
		n, msg := canonicalNumber(m)
		if msg != "" {
			return nil, msg
		}
		s[i] = n
	}
	slices.SortFunc(s, compareNumbers)
	if hasDup(s, func(a, b string) bool { return a == b }) {
		return nil, "Input collection contains duplicates"
	}
	return &types.AttributeValueMemberNS{Value: s}, ""
}

func ingestBinaries(members [][]byte) (av, string) {
	if len(members) == 0 {
		return nil, "One or more parameter values were invalid: Binary sets should not be empty"
	}
	s := make([][]byte, len(members))
	for i, m := range members {
		s[i] = bytes.Clone(nonNil(m))
	}
	slices.SortFunc(s, bytes.Compare)
	if hasDup(s, bytes.Equal) {
		return nil, "Input collection contains duplicates"
	}
	return &types.AttributeValueMemberBS{Value: s}, ""
}

// canonical reports whether v is already as ingest would make it, so that
// a request's value can be read without a copy.
func canonical(v av) bool {
	switch v := v.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
		return true
	case *types.AttributeValueMemberNULL:
		return v.Value
	case *types.AttributeValueMemberN:
		n, msg := canonicalNumber(v.Value)
		return msg == "" && n == v.Value
	case *types.AttributeValueMemberSS:
		return len(v.Value) > 0 && slices.IsSortedFunc(v.Value, strings.Compare) && !hasDup(v.Value, func(a, b string) bool { return a == b })
	case *types.AttributeValueMemberNS:
		return len(v.Value) > 0 && !slices.ContainsFunc(v.Value, func(n string) bool { c, msg := canonicalNumber(n); return msg != "" || c != n }) &&
			slices.IsSortedFunc(v.Value, compareNumbers) && !hasDup(v.Value, func(a, b string) bool { return a == b })
	case *types.AttributeValueMemberBS:
		return len(v.Value) > 0 && slices.IsSortedFunc(v.Value, bytes.Compare) && !hasDup(v.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		return !slices.ContainsFunc(v.Value, func(e av) bool { return !canonical(e) })
	case *types.AttributeValueMemberM:
		for k, e := range v.Value {
			if k == "" || !canonical(e) {
				return false
			}
		}
		return true
	}
	return false
}

// hasDup reports whether a sorted slice has a member equal to its
// predecessor.
func hasDup[T any](s []T, eq func(a, b T) bool) bool {
	for i := 1; i < len(s); i++ {
		if eq(s[i-1], s[i]) {
			return true
		}
	}
	return false
}

// nonNil keeps an empty binary a non-nil slice, as the SDK decodes one.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
