package main

import (
	"strings"
	"testing"
)

// TestGoTypeClass: what idem.ErrorClass keeps when the effect gave no
// class (the types at the bottom of the error's chain) is told from a
// class the effect named, and from the other texts a record's lastError
// holds.
func TestGoTypeClass(t *testing.T) {
	for in, want := range map[string]bool{
		"*errors.errorString":              true,
		"*fmt.wrapError":                   true,
		"*net.OpError":                     true,
		"syscall.Errno":                    true,
		"*x509.UnknownAuthorityError":      true,
		"*smtp.Error, *errors.errorString": true,
		"provider-timeout":                 false,
		"card_declined":                    false,
		"panic":                            false,
		"context deadline exceeded":        false,
		notDoneReason:                      false,
		"":                                 false,
	} {
		if got := goTypeClass(in); got != want {
			t.Errorf("goTypeClass(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestLastErrorWithoutClass: where idemctl shows a last error that is a
// Go type, it says what that is and where the reason is; a class the
// effect named is shown as it is.
func TestLastErrorWithoutClass(t *testing.T) {
	h := newHarness(t)
	bare, named := h.failed("bare", 5), h.failed("named", 5)
	bare.LastError, named.LastError = "*errors.errorString", "provider-timeout"
	h.put("bare", bare)
	h.put("named", named)
	h.sqs.add(h.dlqURL, body("bare", 0), h.now, nil)

	const note = "the error's Go type: the effect gave it no class, so the reason is only in the consumer's log (\"record failed\", by storage_key); an effect names its failures with idem.Classify"
	h.run("inspect", "bare", "named", "--stack", testStack)
	for _, want := range []string{"last error  *errors.errorString (" + note + ")\n", "last error  provider-timeout\n"} {
		if !strings.Contains(h.out.String(), want) {
			t.Errorf("inspect: no %q in\n%s", want, h.out.String())
		}
	}
	out, _ := h.inspect("bare", "named")
	if out.Keys[0].LastError != "*errors.errorString" || out.Keys[0].LastErrorNote != note || out.Keys[1].LastErrorNote != "" {
		t.Errorf("inspect JSON: %q %q, %q", out.Keys[0].LastError, out.Keys[0].LastErrorNote, out.Keys[1].LastErrorNote)
	}

	h.run("list", "--stack", testStack)
	if want := "LAST ERROR *errors.errorString is " + note; !strings.Contains(h.out.String(), want) {
		t.Errorf("list: no %q in\n%s", want, h.out.String())
	}

	h.run("redrive", "--dry-run", "--stack", testStack)
	if want := "failed every time it ran, 5 times (last: *errors.errorString, a Go type: the reason is only in the consumer's log)"; !strings.Contains(h.out.String(), want) {
		t.Errorf("redrive: no %q in\n%s", want, h.out.String())
	}
}
