package ddbmodel

import "testing"

// The expectations come from DynamoDB Local 3.3.1's PutItem, which
// normalises top-level numbers as DynamoDB does.
func TestCanonicalNumber(t *testing.T) {
	for _, tc := range []struct{ in, want, msg string }{
		{"1.50", "1.5", ""},
		{"01", "1", ""},
		{"1e2", "100", ""},
		{"-0", "0", ""},
		{"0.0010", "0.001", ""},
		{"1E-3", "0.001", ""},
		{"+5", "5", ""},
		{".5", "0.5", ""},
		{"5.", "5", ""},
		{"-1.0e-2", "-0.01", ""},
		{"0e5", "0", ""},
		{"1700000000000", "1700000000000", ""},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678", ""},
		{"123456789012345678901234567890123456789", "", msgPrecision},
		{"100000000000000000000000000000000000000000", "100000000000000000000000000000000000000000", ""},
		{"1e125", "1" + zeros(125), ""},
		{"1e126", "", msgOverflow},
		{"1e-130", "0." + zeros(129) + "1", ""},
		{"1e-131", "", msgUnderflow},
		{"1e99999999999999999999", "", msgOverflow},
		{"1e-99999999999999999999", "", msgUnderflow},
		{"0e99999999999999999999", "0", ""},
		{" 1", "", msgNotNumber},
		{"1 ", "", msgNotNumber},
		{"", "", msgNotNumber},
		{"-", "", msgNotNumber},
		{"1.2.3", "", msgNotNumber},
		{"0x10", "", msgNotNumber},
		{"NaN", "", msgNotNumber},
		{"Infinity", "", msgNotNumber},
		{"1e", "", msgNotNumber},
		{"e5", "", msgNotNumber},
		{"1e+-5", "", msgNotNumber},
	} {
		got, msg := canonicalNumber(tc.in)
		if got != tc.want || msg != tc.msg {
			t.Errorf("canonicalNumber(%q) = %q, %q; want %q, %q", tc.in, got, msg, tc.want, tc.msg)
		}
	}
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}

func TestCompareNumbers(t *testing.T) {
	ordered := []string{"-100", "-12.5", "-1.5", "-1", "-0.5", "-0.05", "0", "0.001", "0.05", "0.5", "1", "1.05", "1.5", "9", "10", "12.5", "100", "1700000000000"}
	for i, a := range ordered {
		for j, b := range ordered {
			if got := compareNumbers(a, b); got != cmpInt(i, j) {
				t.Errorf("compareNumbers(%s, %s) = %d, want %d", a, b, got, cmpInt(i, j))
			}
		}
	}
}

func TestAddNumbers(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		sub  bool
		want string
		msg  string
	}{
		{"1", "2", false, "3", ""},
		{"1.5", "1.5", false, "3", ""},
		{"-0.5", "0.5", false, "0", ""},
		{"5", "3.5", true, "1.5", ""},
		{"100", "1.5", false, "101.5", ""},
		{"-0.5", "0.00000000000000000000000000000000000001", false, "-0.49999999999999999999999999999999999999", ""},
		{"-0.5", "100000000000000000000000000000000000000", false, "", msgPrecision},
		{"999000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", "1" + zeros(125), false, "", msgOverflow},
		{"999999999999999999", "1", false, "1000000000000000000", ""},
		{"-999999999999999999", "999999999999999999", true, "-1999999999999999998", ""},
	} {
		got, msg := addNumbers(tc.a, tc.b, tc.sub)
		if got != tc.want || msg != tc.msg {
			t.Errorf("addNumbers(%s, %s, %v) = %q, %q; want %q, %q", tc.a, tc.b, tc.sub, got, msg, tc.want, tc.msg)
		}
	}
}

// Sizes measured with DynamoDB Local: the largest binary attribute that fits
// next to the number, against one that fits alone.
func TestNumberSize(t *testing.T) {
	for n, want := range map[string]int{
		"0": 1, "1": 2, "9": 2, "12": 2, "123": 3, "1234": 3, "12345": 4,
		"100": 2, "1000": 2, "10000": 2, "10000000000": 2, "100000000000": 2,
		"1700000000000": 3, "1700000000": 2, "-5": 3, "-12345": 5,
		"1.5": 3, "0.5": 2, "0.05": 2, "0.001": 2, "12.5": 3, "1.25": 3,
		"12345678901234567890123456789012345678": 20,
		"1" + zeros(100):                         2,
		"0." + zeros(99) + "1":                   2,
	} {
		if got := numberSize(n); got != want {
			t.Errorf("numberSize(%s) = %d, want %d", n, got, want)
		}
	}
}
