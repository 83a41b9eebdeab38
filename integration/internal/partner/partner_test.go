package partner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func call(t *testing.T, ctx context.Context, url, key string) (int, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/effects", strings.NewReader(`{"amount":1}`))
	req.Header.Set(KeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func lookup(t *testing.T, url, key string) (int, answer) {
	t.Helper()
	resp, err := http.Get(url + "/effects/" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a
}

func start(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s, err := Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestHonoursTheKey(t *testing.T) {
	s := start(t)
	for range 3 {
		if code, err := call(t, context.Background(), s.URL(), "k1"); err != nil || code != 200 {
			t.Fatalf("POST: %d, %v", code, err)
		}
	}
	if s.Applied()["k1"] != 1 || s.Calls("k1") != 3 {
		t.Fatalf("applied %d, calls %d; want 1 and 3", s.Applied()["k1"], s.Calls("k1"))
	}
	if code, a := lookup(t, s.URL(), "k1"); code != 200 || a.Applied != 1 || a.ID == "" {
		t.Fatalf("lookup k1: %d %+v", code, a)
	}
	if code, _ := lookup(t, s.URL(), "never"); code != 404 {
		t.Fatalf("lookup of a key never sent: %d, want 404", code)
	}
}

func TestIgnoresTheKey(t *testing.T) {
	s := start(t, IgnoreKey())
	for range 2 {
		_, _ = call(t, context.Background(), s.URL(), "k")
	}
	if s.Applied()["k"] != 2 {
		t.Fatalf("applied %d; want 2 (the double shows)", s.Applied()["k"])
	}
}

func TestFaults(t *testing.T) {
	s := start(t, WithFaults(Faults{LoseReply: 1}))
	if _, err := call(t, context.Background(), s.URL(), "lost"); err == nil {
		t.Fatal("lose reply: the call succeeded")
	}
	if s.Applied()["lost"] != 1 {
		t.Fatal("lose reply: not applied")
	}

	s.SetFaults(Faults{Slow: 1, SlowFor: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := call(t, ctx, s.URL(), "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v; want the caller's deadline", err)
	}
	if s.Applied()["slow"] != 1 {
		t.Fatal("slow: not applied")
	}

	s.SetFaults(Faults{Refuse: 1})
	if code, _ := call(t, context.Background(), s.URL(), "refused"); code != 503 || s.Applied()["refused"] != 0 {
		t.Fatalf("refuse: %d, applied %d; want 503, not applied", code, s.Applied()["refused"])
	}

	s.SetFaults(Faults{Down: true})
	if code, _ := lookup(t, s.URL(), "lost"); code != 503 {
		t.Fatalf("lookup while down: %d, want 503", code)
	}
}
