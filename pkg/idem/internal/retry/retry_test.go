package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errBusy = errors.New("busy")

func transient(err error) bool { return errors.Is(err, errBusy) }

func fast(int) time.Duration { return time.Millisecond }

func TestDo(t *testing.T) {
	calls := 0
	err := Do(context.Background(), 0, transient, fast, func(context.Context) error {
		calls++
		if calls < 3 {
			return errBusy
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("until success: %v after %d calls", err, calls)
	}
	calls = 0
	err = Do(context.Background(), 4, transient, fast, func(context.Context) error { calls++; return errBusy })
	if !errors.Is(err, errBusy) || calls != 4 {
		t.Fatalf("bounded: %v after %d calls", err, calls)
	}
	calls = 0
	permanent := errors.New("no such table")
	err = Do(context.Background(), 0, transient, fast, func(context.Context) error { calls++; return permanent })
	if !errors.Is(err, permanent) || calls != 1 {
		t.Fatalf("permanent: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err = Do(ctx, 0, transient, fast, func(context.Context) error { return errBusy })
	if !errors.Is(err, errBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("until the deadline: %v", err)
	}
}

func TestJitterIsCapped(t *testing.T) {
	for n := range 100 {
		if d := Jitter(n); d <= 0 || d > Cap+time.Millisecond {
			t.Fatalf("Jitter(%d) = %s", n, d)
		}
	}
}
