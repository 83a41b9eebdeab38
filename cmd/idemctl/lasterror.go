package main

import (
	"regexp"
	"strings"
)

// A FAILED record's lastError is, by default (idem.ErrorClass), the class
// the effect gave its error with idem.Classify — or, when it gave none,
// the Go types at the bottom of the error's chain, "*errors.errorString"
// or "*smtp.Error, *errors.errorString", which name no reason: that is
// only in the consumer's log line for the record. idemctl shows lastError
// as stored, and says so when it is such a type.

// goTypeName is a type as %T prints it: package name, dot, type name.
var goTypeName = regexp.MustCompile(`^\*?[a-z][a-z0-9]*\.[A-Za-z_][A-Za-z0-9_]*$`)

// goTypeClass reports whether lastError is Go type names, not a class.
func goTypeClass(lastError string) bool {
	if lastError == "" {
		return false
	}
	for _, t := range strings.Split(lastError, ", ") {
		if !goTypeName.MatchString(t) {
			return false
		}
	}
	return true
}

// goTypeNote says what a lastError of Go types is, and where its reason is.
const goTypeNote = `the error's Go type: the effect gave it no class, so the reason is only in the consumer's log ("record failed", by storage_key); an effect names its failures with idem.Classify`

// lastErrorNote is goTypeNote for a lastError of Go types, else "".
func lastErrorNote(lastError string) string {
	if goTypeClass(lastError) {
		return goTypeNote
	}
	return ""
}

// lastErrorBrief is lastError inside a one-line reason.
func lastErrorBrief(lastError string) string {
	if goTypeClass(lastError) {
		return lastError + ", a Go type: the reason is only in the consumer's log"
	}
	return orDash(lastError)
}
