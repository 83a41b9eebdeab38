package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// emit writes v as JSON (--output json), or calls table with a tab-aligned
// writer. The JSON of each command is documented in doc.go; its fields are
// only ever added to.
func (a *app) emit(v any, table func(w io.Writer)) error {
	if a.output == outputJSON {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return a.aligned(table)
}

// aligned calls write with a writer whose tab-separated cells line up.
func (a *app) aligned(write func(w io.Writer)) error {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	write(tw)
	return tw.Flush()
}

// stamp is t in UTC to the second, "-" for the zero time. Operators paste
// it into log queries, which are in UTC.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// stampPtr is t for JSON: absent when zero.
func stampPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	return &u
}

// since and until are how long ago t was, and how long until it is.
func since(now, t time.Time) string { return human(now.Sub(t)) }
func until(now, t time.Time) string { return human(t.Sub(now)) }

// human rounds d to what a person compares: seconds under a minute,
// minutes and seconds under an hour, then hours and minutes, then days
// and hours.
func human(d time.Duration) string {
	if d < 0 {
		return "-" + human(-d)
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", d.Round(time.Second)/time.Second)
	case d < time.Hour:
		return pair(d.Round(time.Second), time.Minute, "m", time.Second, "s")
	case d < 48*time.Hour:
		return pair(d.Round(time.Minute), time.Hour, "h", time.Minute, "m")
	}
	return pair(d.Round(time.Hour), 24*time.Hour, "d", time.Hour, "h")
}

// pair writes d as a count of big units and of small ones: "4m10s", "4m".
func pair(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	if rest := d % big / small; rest != 0 {
		return fmt.Sprintf("%d%s%d%s", d/big, bigName, rest, smallName)
	}
	return fmt.Sprintf("%d%s", d/big, bigName)
}

// relative is t with how far it is from now: "2025-01-02T03:04:05Z (3m ago)".
func relative(now, t time.Time) string {
	switch {
	case t.IsZero():
		return "-"
	case t.After(now):
		return fmt.Sprintf("%s (in %s)", stamp(t), until(now, t))
	}
	return fmt.Sprintf("%s (%s ago)", stamp(t), since(now, t))
}

// seconds is d for JSON, in whole seconds.
func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// shownKey is a storage key fit to print: a hashed one as it is (it is
// what the consumer logs as storage_key, and what `--storage-key` takes);
// a plain one (idem.WithPlainKeys) holds a business key, so only its
// length is shown, unless --show-keys.
func (a *app) shownKey(skey string) string {
	ns, key, ok := strings.Cut(skey, idem.KeySeparator)
	if !ok || a.showKeys || isHash(key) {
		return skey
	}
	return fmt.Sprintf("%s%s<plain key, %d bytes: --show-keys>", ns, idem.KeySeparator, len(key))
}

// isHash reports whether key is what a Guard makes of a key by default:
// hex SHA-256.
func isHash(key string) bool {
	_, err := hex.DecodeString(key)
	return err == nil && len(key) == 64 && strings.ToLower(key) == key
}

// resultSize is what a record keeps of the effect's result, in words.
func resultSize(rec idem.Record) string {
	switch {
	case rec.Resolved:
		return "none: an operator wrote the receipt (idemctl resolve --done)"
	case rec.ResultOmitted:
		return "omitted (larger than the cap)"
	case len(rec.Result) == 0:
		return "none"
	}
	return fmt.Sprintf("%d bytes", len(rec.Result))
}

// orDash is s, or "-" in a table cell when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
