package redisstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The fields of the record's hash, named as dynamostore's attributes. The
// scripts spell them out too (scripts.go).
const (
	fieldStatus        = "status"
	fieldLease         = "lease"
	fieldLeaseUntil    = "leaseUntil"    // Unix milliseconds
	fieldExpiresAt     = "expiresAt"     // Unix milliseconds; also the key's TTL (PEXPIREAT)
	fieldAttempts      = "attempts"      // incremented by every acquire (HINCRBY)
	fieldFingerprint   = "fingerprint"   // absent: no payload check
	fieldResult        = "result"        // bytes as they are
	fieldResultOmitted = "resultOmitted" // "1" when the result was not kept
	fieldUpdatedAt     = "updatedAt"     // Unix milliseconds
	fieldLastError     = "lastError"
	fieldPrevStatus    = "prevStatus" // on an acquired record: the status of the record it took over
	// fieldResolved is "1" on a receipt an operator wrote (resolveLua);
	// see resolved.
	fieldResolved = "resolved"
	// The field "released", the lease of the last release that landed, is
	// read and written by releaseLua alone (a Record does not carry it).
)

// millis is how times travel to the scripts and sit in the hash: Unix
// milliseconds, the unit of PEXPIREAT, precise enough for leases of a few
// seconds.
func millis(t time.Time) int64 { return t.UnixMilli() }

// expiry is the argument for an expiry time: "" for the zero time, which
// never expires (no TTL), as in idemtest's MemoryStore.
func expiry(t time.Time) any {
	if t.IsZero() {
		return ""
	}
	return millis(t)
}

// flag is the argument for a boolean field: "1" or "" (absent).
func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// acquired splits the reply of acquireLua: {1 or 0, flat hash}.
func acquired(key string, v any) (rec idem.Record, ok bool, err error) {
	reply, isSlice := v.([]any)
	if !isSlice || len(reply) != 2 {
		return idem.Record{}, false, fmt.Errorf("unexpected reply %T of length %d", v, len(reply))
	}
	n, isInt := reply[0].(int64)
	if !isInt {
		return idem.Record{}, false, fmt.Errorf("unexpected reply: first element is %T", reply[0])
	}
	rec, err = decode(key, reply[1])
	return rec, n == 1, err
}

// decode turns a flat HGETALL reply (field, value, field, value...) into the
// record stored under key. Missing fields decode as zero values; times that
// are absent stay the zero time.
func decode(key string, v any) (idem.Record, error) {
	flat, ok := v.([]any)
	if !ok || len(flat)%2 != 0 {
		return idem.Record{}, fmt.Errorf("unexpected hash reply %T", v)
	}
	rec := idem.Record{Key: key}
	flagged := false
	for i := 0; i < len(flat); i += 2 {
		name, _ := flat[i].(string)
		value, ok := flat[i+1].(string)
		if !ok {
			return idem.Record{}, fmt.Errorf("field %q: unexpected value %T", name, flat[i+1])
		}
		if name == fieldResolved {
			flagged = value == "1"
			continue
		}
		if err := set(&rec, name, value); err != nil {
			return idem.Record{}, fmt.Errorf("field %q: %w", name, err)
		}
	}
	rec.Resolved = resolved(flagged, rec)
	return rec, nil
}

// resolved reports whether a record whose resolved field is flagged is
// the receipt Resolve wrote: an acquire deletes the field, so only a
// COMPLETED record Resolve wrote carries it.
func resolved(flagged bool, rec idem.Record) bool {
	return flagged && rec.Status == idem.StatusCompleted
}

// set decodes one field into rec; unknown fields are ignored, so that an
// operator's annotations or a newer version's fields do not break reads.
func set(rec *idem.Record, name, value string) error {
	var err error
	switch name {
	case fieldStatus:
		rec.Status = idem.Status(value)
	case fieldLease:
		rec.Lease = value
	case fieldLeaseUntil:
		rec.LeaseUntil, err = parseMillis(value)
	case fieldExpiresAt:
		rec.ExpiresAt, err = parseMillis(value)
	case fieldAttempts:
		rec.Attempts, err = strconv.Atoi(value)
	case fieldFingerprint:
		rec.Fingerprint = value
	case fieldResult:
		if value != "" {
			rec.Result = []byte(value)
		}
	case fieldResultOmitted:
		rec.ResultOmitted = value == "1"
	case fieldUpdatedAt:
		rec.UpdatedAt, err = parseMillis(value)
	case fieldLastError:
		rec.LastError = value
	case fieldPrevStatus:
		rec.PrevStatus = idem.Status(value)
	}
	return err
}

func parseMillis(s string) (time.Time, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}
