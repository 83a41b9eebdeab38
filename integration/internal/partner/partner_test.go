package partner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
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

// TestInjectedAndStats: every fault is logged with its key and whether the
// call took place all the same; lookups are counted, also while down; the
// /stats answer is Stats.
func TestInjectedAndStats(t *testing.T) {
	s := start(t, IgnoreKey())
	if code, err := call(t, context.Background(), s.URL(), "ok"); err != nil || code != 200 {
		t.Fatalf("POST: %d, %v", code, err)
	}
	s.SetFaults(Faults{Refuse: 1})
	_, _ = call(t, context.Background(), s.URL(), "refused")
	s.SetFaults(Faults{LoseReply: 1})
	_, _ = call(t, context.Background(), s.URL(), "lost")
	// Slow with SlowFor 0 answers at once: the fault is logged without a
	// wait, whatever the machine's load.
	s.SetFaults(Faults{Slow: 1})
	_, _ = call(t, context.Background(), s.URL(), "slow")
	s.SetFaults(Faults{Down: true, LoseReply: 1})
	if code, _ := call(t, context.Background(), s.URL(), "down"); code != 503 {
		t.Fatalf("POST while down: %d, want 503", code)
	}
	if code, _ := lookup(t, s.URL(), "ok"); code != 503 {
		t.Fatalf("lookup while down: %d, want 503", code)
	}
	if f := s.Faults(); !f.Down || f.LoseReply != 1 {
		t.Fatalf("Faults() = %+v", f)
	}
	s.SetFaults(Faults{})
	for _, k := range []string{"ok", "lost", "refused"} {
		lookup(t, s.URL(), k)
	}

	var got []string
	for _, in := range s.Injected() {
		got = append(got, fmt.Sprintf("%s %s %v", in.Key, in.Kind, in.Applied))
		if in.At.IsZero() {
			t.Errorf("injection %+v has no time", in)
		}
	}
	want := []string{"refused refused false", "lost lost-reply true", "slow slow true", "down down false"}
	if !slices.Equal(got, want) {
		t.Fatalf("Injected() = %q, want %q", got, want)
	}
	wantStats := Stats{Calls: 5, Applied: 3, Keys: 3, Lookups: 4, Refused: 1, LostReplies: 1, SlowReplies: 1, DownCalls: 1, DownLookups: 1}
	if st := s.Stats(); st != wantStats {
		t.Fatalf("Stats() = %+v, want %+v", st, wantStats)
	}
	resp, err := http.Get(s.URL() + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st != wantStats {
		t.Fatalf("GET /stats = %+v, %v; want %+v", st, err, wantStats)
	}
}

// TestLostReplyNotReplayed: a reply lost on a reused connection is not
// replayed by Go's transport (which replays a request with an
// Idempotency-Key when the server closed the connection before answering
// anything): the call fails, once, and its effect took place once.
func TestLostReplyNotReplayed(t *testing.T) {
	s := start(t, IgnoreKey())
	if code, err := call(t, context.Background(), s.URL(), "warm"); err != nil || code != 200 {
		t.Fatalf("POST: %d, %v", code, err)
	}
	s.SetFaults(Faults{LoseReply: 0.5})
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		_, err := call(t, context.Background(), s.URL(), key)
		if s.Calls(key) != 1 || s.Applied()[key] != 1 {
			t.Fatalf("%s: %d calls, applied %d (err %v); want one of each", key, s.Calls(key), s.Applied()[key], err)
		}
	}
	if st := s.Stats(); st.LostReplies == 0 {
		t.Fatalf("no reply lost in 20 calls at 50%%: %+v", st)
	}
}

// TestServesTheSettingsPath: a fork's setting may name another endpoint
// than /effects (a PSP's /v1/captures, the partner's root): the partner
// serves the call, the lookup (GET <path>/<key>) and the probe's counts
// (GET <path>) there, with one count per key across paths; SuitePaths
// finds the path in a setting's suite value.
func TestServesTheSettingsPath(t *testing.T) {
	s := start(t, IgnoreKey(), Paths("/v1/captures", "/"))
	for _, p := range []string{"/v1/captures", "/v1/captures/", "/", DefaultPath} {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+p, strings.NewReader(`{"orderId":"o-1"}`))
		req.Header.Set(KeyHeader, "o-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("POST %s: %s", p, resp.Status)
		}
	}
	for path, want := range map[string]int{"/v1/captures/o-1": 200, "/v1/captures/o-2": 404, "/o-1": 200, "/effects/o-1": 200} {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
	for _, p := range []string{"/v1/captures", "/"} {
		resp, err := http.Get(s.URL() + p)
		if err != nil {
			t.Fatal(err)
		}
		var counts map[string]int
		err = json.NewDecoder(resp.Body).Decode(&counts)
		resp.Body.Close()
		if err != nil || counts["o-1"] != 4 {
			t.Errorf("GET %s: %v, %v; want o-1 counted on every path", p, counts, err)
		}
	}
	if got := SuitePaths([]contract.Setting{
		{Suite: contract.SuitePartner + "/v1/captures"}, {Suite: contract.SuitePartner}, {Suite: "https://elsewhere.example/x"}, {Suite: contract.SuitePartner + "/hooks/?x=1"},
	}); !slices.Equal(got, []string{"/v1/captures", "/", "/hooks"}) {
		t.Errorf("SuitePaths = %v", got)
	}
}
