package ddbmodel

import (
	"math/big"
	"strconv"
	"strings"
)

// DynamoDB numbers are decimals of up to 38 significant digits with a
// magnitude between 1e-130 and 1e126 (exclusive), compared and added
// exactly. The server normalises them: "1.50", "01", "1e2" and "-0" come
// back as "1.5", "1", "100" and "0". The model stores every number in that
// canonical form, so equal numbers are equal strings.

// DynamoDB's limits on numbers.
const (
	maxDigits = 38
	maxExp    = 126  // 0.d × 10^126 is the largest magnitude, just under 1e126
	minExp    = -129 // 0.1 × 10^-129 is 1e-130, the smallest
)

// Messages of DynamoDB for a number it cannot take.
const (
	msgNotNumber = "A value provided cannot be converted into a number"
	msgPrecision = "DynamoDB only supports precision up to 38 digits"
	msgOverflow  = "Number overflow. Attempting to store a number with magnitude larger than supported range"
	msgUnderflow = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
)

// decimal is a number: (neg ? -1 : 1) × 0.digits × 10^exp. digits has no
// leading or trailing zeros; zero is digits "".
type decimal struct {
	neg    bool
	digits string
	exp    int
}

func (d decimal) isZero() bool { return d.digits == "" }

// parseNumber parses the text of an N value as DynamoDB (Java's BigDecimal)
// does: a sign, digits with an optional point, an optional exponent; no
// spaces, no hexadecimal, no NaN. The second result is the error message.
func parseNumber(s string) (decimal, string) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	var b strings.Builder
	intDigits, seen, point := 0, false, false
mantissa:
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			seen = true
			if c == '0' && b.Len() == 0 {
				if point {
					intDigits-- // a leading zero after the point moves the point
				}
				continue
			}
			b.WriteByte(c)
			if !point {
				intDigits++
			}
		case c == '.' && !point:
			point = true
		default:
			break mantissa
		}
	}
	if !seen {
		return decimal{}, msgNotNumber
	}
	exp, msg := parseExponent(s[i:], b.Len() > 0)
	if msg != "" {
		return decimal{}, msg
	}
	d.digits = strings.TrimRight(b.String(), "0")
	if d.digits == "" {
		return decimal{}, ""
	}
	d.exp = intDigits + exp
	return d, d.check()
}

// parseExponent parses the exponent part of a number ("" or "e-5");
// nonzero tells an exponent too large for an int apart from an invalid one.
func parseExponent(s string, nonzero bool) (int, string) {
	if s == "" {
		return 0, ""
	}
	if s[0] != 'e' && s[0] != 'E' {
		return 0, msgNotNumber
	}
	s = s[1:]
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, msgNotNumber
	}
	e, err := strconv.Atoi(s)
	switch {
	case err != nil && !nonzero:
		return 0, ""
	case err != nil && neg:
		return 0, msgUnderflow
	case err != nil:
		return 0, msgOverflow
	case neg:
		return -e, ""
	}
	return e, ""
}

// check returns DynamoDB's message when d is out of its range, else "".
func (d decimal) check() string {
	switch {
	case d.isZero():
		return ""
	case len(d.digits) > maxDigits:
		return msgPrecision
	case d.exp > maxExp:
		return msgOverflow
	case d.exp < minExp:
		return msgUnderflow
	}
	return ""
}

// String is the canonical text: plain notation, no redundant zeros.
func (d decimal) String() string {
	if d.isZero() {
		return "0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	switch n := len(d.digits); {
	case d.exp <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -d.exp))
		b.WriteString(d.digits)
	case d.exp < n:
		b.WriteString(d.digits[:d.exp])
		b.WriteByte('.')
		b.WriteString(d.digits[d.exp:])
	default:
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", d.exp-n))
	}
	return b.String()
}

// canonicalNumber returns the canonical text of s, or DynamoDB's message.
// Canonical integers, the common case, come back as they are.
func canonicalNumber(s string) (string, string) {
	if isCanonicalInt(s) {
		return s, ""
	}
	d, msg := parseNumber(s)
	if msg != "" {
		return "", msg
	}
	return d.String(), ""
}

// isCanonicalInt reports whether s is "0" or an integer without leading
// zeros and within DynamoDB's precision, which is its own canonical form.
func isCanonicalInt(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > maxDigits || digits[0] == '0' && (len(digits) > 1 || len(s) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// compareNumbers compares two canonical number texts numerically, without
// parsing them into digits: it runs for every numeric comparison.
func compareNumbers(a, b string) int {
	sa, sb := canonicalSign(a), canonicalSign(b)
	if sa != sb || sa == 0 {
		return cmpInt(sa, sb)
	}
	ai, af, _ := strings.Cut(strings.TrimPrefix(a, "-"), ".")
	bi, bf, _ := strings.Cut(strings.TrimPrefix(b, "-"), ".")
	if ai == "0" {
		ai = ""
	}
	if bi == "0" {
		bi = ""
	}
	// Integer parts have no leading zeros, fractions no trailing ones: the
	// longer integer part is larger, then the digits decide.
	c := cmpInt(len(ai), len(bi))
	if c == 0 {
		c = strings.Compare(ai, bi)
	}
	if c == 0 {
		c = strings.Compare(af, bf)
	}
	return c * sa
}

// canonicalSign is the sign of a canonical number text.
func canonicalSign(s string) int {
	switch {
	case s == "0":
		return 0
	case strings.HasPrefix(s, "-"):
		return -1
	}
	return 1
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// addNumbers returns a+b (a-b when sub) of two canonical number texts, in
// canonical text, or DynamoDB's message when the result is out of range.
func addNumbers(a, b string, sub bool) (string, string) {
	if x, ok := smallInt(a); ok {
		if y, ok := smallInt(b); ok {
			if sub {
				y = -y
			}
			return strconv.FormatInt(x+y, 10), ""
		}
	}
	x, _ := parseNumber(a)
	y, _ := parseNumber(b)
	if sub {
		y.neg = !y.neg
	}
	// x = mx × 10^ex with mx an integer; the same for y.
	mx, ex := x.mantissa()
	my, ey := y.mantissa()
	e := min(ex, ey)
	mx.Mul(mx, pow10(ex-e))
	my.Mul(my, pow10(ey-e))
	sum := mx.Add(mx, my)
	if sum.Sign() == 0 {
		return "0", ""
	}
	text := strings.TrimPrefix(sum.Text(10), "-")
	d := decimal{neg: sum.Sign() < 0, digits: strings.TrimRight(text, "0"), exp: len(text) + e}
	if msg := d.check(); msg != "" {
		return "", msg
	}
	return d.String(), ""
}

// smallInt parses a canonical integer of at most 18 digits, whose sum with
// another cannot overflow an int64: the counters of this project.
func smallInt(s string) (int64, bool) {
	if len(s) > 18 || strings.Contains(s, ".") {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// mantissa returns d as an integer m and exponent e with d = m × 10^e.
func (d decimal) mantissa() (*big.Int, int) {
	m := new(big.Int)
	if d.isZero() {
		return m, 0
	}
	m.SetString(d.digits, 10)
	if d.neg {
		m.Neg(m)
	}
	return m, d.exp - len(d.digits)
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
