package ddbmodel

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultItemLimit is DynamoDB's item size limit, 400 KB.
const DefaultItemLimit = 400 << 10

// Messages for an item over the limit.
const (
	msgUpdateTooLarge = "Item size to update has exceeded the maximum allowed size"
	msgPutTooLarge    = "Item size has exceeded the maximum allowed size"
)

// itemSize is the size DynamoDB counts for an item: the UTF-8 length of
// each attribute name plus the size of its value. Measured against DynamoDB
// Local with the largest binary that still fits beside each kind of value.
func itemSize(m item) int {
	n := 0
	for k, v := range m {
		n += len(k) + valueSize(v)
	}
	return n
}

// valueSize: strings and binaries by length, numbers as numberSize says,
// BOOL and NULL one byte, sets the sum of their members, lists and maps 3
// bytes plus 1 per element (and for maps the keys' lengths).
func valueSize(v av) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, m := range v.Value {
			n += len(m)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, m := range v.Value {
			n += numberSize(m)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, m := range v.Value {
			n += len(m)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is the bytes DynamoDB counts for a number: one for the
// exponent, one per pair of digits aligned on the decimal point (leading and
// trailing zero pairs dropped), and one more for a negative number. Measured
// against DynamoDB Local: 1 → 2, 12345 → 4, 1.5 → 3, 0.001 → 2, -5 → 3.
func numberSize(canonical string) int {
	if canonical == "0" {
		return 1
	}
	abs := strings.TrimPrefix(canonical, "-")
	// The shape of 0.digits × 10^exp, read off the canonical text.
	var ndigits, exp int
	switch i, f, point := strings.Cut(abs, "."); {
	case !point:
		ndigits, exp = len(strings.TrimRight(i, "0")), len(i)
	case i == "0":
		z := len(f) - len(strings.TrimLeft(f, "0"))
		ndigits, exp = len(f)-z, -z
	default:
		ndigits, exp = len(i)+len(f), len(i)
	}
	// Digit k stands for 10^(exp-1-k); its pair is floor((exp-1-k)/2).
	n := 1 + floorHalf(exp-1) - floorHalf(exp-ndigits) + 1
	if len(abs) < len(canonical) {
		n++
	}
	return n
}

func floorHalf(n int) int {
	if n < 0 {
		return -((-n + 1) / 2)
	}
	return n / 2
}
