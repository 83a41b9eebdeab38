package idemtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The subtests of limits: result sizes and bad input.

func (s *suite) oversized(t *testing.T, store idem.Store) {
	g := newGuard(t, store, idem.WithMaxResultSize(1024))
	ctx := context.Background()
	key := unique("order")
	big := bytes.Repeat([]byte("x"), 1025)
	res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return big, nil })
	if err != nil || res.Outcome != idem.Executed || !res.ResultOmitted || !bytes.Equal(res.Value, big) {
		t.Fatalf("oversized result: outcome %v omitted %v err %v", res.Outcome, res.ResultOmitted, err)
	}
	ran := false
	res, err = g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	if err != nil || ran || res.Outcome != idem.Duplicate || !res.ResultOmitted || res.Value != nil {
		t.Fatalf("duplicate of oversized: %+v, %v (ran %v); want Duplicate, ResultOmitted, no value", res, err, ran)
	}
}

// maxRoundTrip bounds the declared result size the suite writes for real.
const maxRoundTrip = 8 << 20

// declaredResultSize: a cap above the store's declared MaxResultSize is
// refused, and a result of exactly that size is kept and replayed, under the
// longest storage key the store takes (up to a 128-byte namespace and a
// 1024-byte plain key).
func (s *suite) declaredResultSize(t *testing.T, store idem.Store) {
	caps := store.Capabilities()
	if caps.MaxKeySize < 200 {
		t.Fatalf("Capabilities().MaxKeySize = %d: a store must keep hashed storage keys (a namespace of up to %d bytes, '#' and 64 hex digits)", caps.MaxKeySize, idem.MaxNamespaceLen)
	}
	if _, err := idem.New(store, "ns", idem.WithMaxResultSize(caps.MaxResultSize+1)); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("WithMaxResultSize(%d), above the declared %d: %v, want ErrInvalid", caps.MaxResultSize+1, caps.MaxResultSize, err)
	}
	if caps.MaxResultSize > maxRoundTrip {
		t.Logf("declared MaxResultSize %d: round trip not tried above %d", caps.MaxResultSize, maxRoundTrip)
		return
	}
	ns := unique("ns")
	ns += strings.Repeat("n", idem.MaxNamespaceLen-len(ns))
	g, err := idem.New(store, ns, idem.WithPlainKeys(), idem.WithMaxResultSize(caps.MaxResultSize))
	if err != nil {
		t.Fatal(err)
	}
	key := unique("order")
	key += strings.Repeat("k", min(caps.MaxKeySize, idem.MaxStorageKeyLen)-len(ns)-len(idem.KeySeparator)-len(key))
	result := bytes.Repeat([]byte{0xA5}, caps.MaxResultSize)
	ctx := context.Background()
	res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return result, nil })
	if err != nil || res.Outcome != idem.Executed || res.ResultOmitted {
		t.Fatalf("result of the declared %d bytes: %v, omitted %v, %v", caps.MaxResultSize, res.Outcome, res.ResultOmitted, err)
	}
	res, err = g.Do(ctx, key, []byte("p"), value("x"))
	if err != nil || res.Outcome != idem.Duplicate || !bytes.Equal(res.Value, result) {
		t.Fatalf("replay of the declared %d bytes: %v, %d bytes, %v", caps.MaxResultSize, res.Outcome, len(res.Value), err)
	}
}

// countingStore counts Acquire calls.
type countingStore struct {
	idem.Store
	calls atomic.Int32
}

func (c *countingStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	c.calls.Add(1)
	return c.Store.Acquire(ctx, a)
}

func (s *suite) badInput(t *testing.T, store idem.Store) {
	cs := &countingStore{Store: store}
	g := newGuard(t, cs)
	ctx := context.Background()
	for name, key := range map[string]string{
		"empty":    "",
		"too long": strings.Repeat("k", idem.MaxKeyLen+1),
		"bad utf8": "\xff\xfe",
	} {
		res, err := g.Do(ctx, key, nil, value("v"))
		if !errors.Is(err, idem.ErrInvalid) || res.Outcome != idem.Rejected {
			t.Errorf("%s key: %+v, %v; want ErrInvalid", name, res, err)
		}
	}
	if _, err := g.Do(ctx, "k", nil, nil); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("nil func: %v, want ErrInvalid", err)
	}
	if max := store.Capabilities().MaxKeySize; max < idem.MaxStorageKeyLen {
		plain, err := idem.New(cs, "ns", idem.WithPlainKeys())
		if err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("k", max+1-len("ns#"))
		if res, err := plain.Do(ctx, long, nil, value("v")); !errors.Is(err, idem.ErrInvalid) || res.Outcome != idem.Rejected {
			t.Errorf("storage key of %d bytes, over the store's %d: %+v, %v; want ErrInvalid", max+1, max, res, err)
		}
	}
	if n := cs.calls.Load(); n != 0 {
		t.Fatalf("bad input made %d store calls", n)
	}
	for name, bad := range map[string]func() error{
		"separator in namespace": func() error { _, err := idem.New(store, "a#b"); return err },
		"empty namespace":        func() error { _, err := idem.New(store, ""); return err },
		"zero lease":             func() error { _, err := idem.New(store, "ns", idem.WithLease(0)); return err },
		"negative retention":     func() error { _, err := idem.New(store, "ns", idem.WithRetention(-time.Second)); return err },
		"zero margin":            func() error { _, err := idem.New(store, "ns", idem.WithSafetyMargin(0)); return err },
		"lease within margin": func() error {
			_, err := idem.New(store, "ns", idem.WithLease(time.Second), idem.WithSafetyMargin(time.Second))
			return err
		},
	} {
		if err := bad(); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
