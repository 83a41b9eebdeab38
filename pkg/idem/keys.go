package idem

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// StorageKey returns the key under which the record for key is stored:
// namespace#sha256(key), or namespace#key with WithPlainKeys.
func (g *Guard) StorageKey(key string) string {
	if g.opts.plainKeys {
		return g.namespace + KeySeparator + key
	}
	sum := sha256.Sum256([]byte(key))
	return g.namespace + KeySeparator + hex.EncodeToString(sum[:])
}

func validNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("%w: empty namespace", ErrInvalid)
	case len(ns) > MaxNamespaceLen:
		return fmt.Errorf("%w: namespace is %d bytes, more than %d", ErrInvalid, len(ns), MaxNamespaceLen)
	case strings.Contains(ns, KeySeparator):
		return fmt.Errorf("%w: namespace %q contains the separator %q", ErrInvalid, ns, KeySeparator)
	case !utf8.ValidString(ns):
		return fmt.Errorf("%w: namespace is not valid UTF-8", ErrInvalid)
	}
	return nil
}

// validCall checks the arguments of Do and DoTx before any store call, and
// returns the storage key.
func (g *Guard) validCall(key string, nilFunc bool) (string, error) {
	switch {
	case nilFunc:
		return "", fmt.Errorf("%w: nil function", ErrInvalid)
	case key == "":
		return "", fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return "", fmt.Errorf("%w: key is %d bytes, more than %d", ErrInvalid, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return "", fmt.Errorf("%w: key is not valid UTF-8", ErrInvalid)
	}
	skey := g.StorageKey(key)
	if len(skey) > g.caps.MaxKeySize {
		return "", fmt.Errorf("%w: storage key is %d bytes, more than the store keeps (%d)", ErrInvalid, len(skey), g.caps.MaxKeySize)
	}
	return skey, nil
}

// Fingerprint is what a record keeps of the payload it was taken with:
// base64 of its SHA-256, or "" for an empty payload (no check). Operator
// tools compare it with a message to tell a copy from the same key reused
// with other content.
func Fingerprint(payload []byte) string { return fingerprint(payload) }

// fingerprint returns the fingerprint stored for payload: base64 of its
// SHA-256, or "" for an empty payload (no check).
func fingerprint(payload []byte) string {
	if len(payload) == 0 {
		return ""
	}
	sum := sha256.Sum256(payload)
	return base64.RawStdEncoding.EncodeToString(sum[:])
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idem: lease token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
