package cost

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is the size DynamoDB counts for an item, the size its write
// units and storage are billed by: the UTF-8 length of each attribute name
// plus the size of its value. The rules are integration/sim/ddbmodel's
// (size.go), measured there against DynamoDB Local.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

// valueSize: strings and binaries by length, numbers as numberSize says,
// BOOL and NULL one byte, sets the sum of their members, lists and maps 3
// bytes plus 1 per element (and for maps the keys' lengths).
func valueSize(v types.AttributeValue) int {
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

// numberSize is the bytes DynamoDB counts for a number (its text as
// DynamoDB returns it): one for the exponent, one per pair of digits
// aligned on the decimal point (leading and trailing zero pairs dropped),
// and one more for a negative number: 1 → 2, 12345 → 4, 1.5 → 3, 0.001 → 2,
// -5 → 3.
func numberSize(text string) int {
	if text == "0" {
		return 1
	}
	abs := strings.TrimPrefix(text, "-")
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
	n := 1 + floorHalf(exp-1) - floorHalf(exp-ndigits) + 1
	if len(abs) < len(text) {
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
