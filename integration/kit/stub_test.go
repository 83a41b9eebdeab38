package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func startStub(t *testing.T) *Stub {
	t.Helper()
	s, err := StartStub("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stubDo sends a request to the stub; key "" sends no Idempotency-Key.
func stubDo(t *testing.T, method, url, key string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Authorization", "Bearer partner-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestStubCountsEveryPost(t *testing.T) {
	s := startStub(t)
	var ids []string
	for range 2 {
		code, body := stubDo(t, "POST", s.URL()+"/messages", "k1", strings.NewReader(`{"to":"+1"}`))
		var a struct{ ID, Key string }
		if code != http.StatusCreated || json.Unmarshal([]byte(body), &a) != nil || a.Key != "k1" {
			t.Fatalf("POST: %d %s, want 201 with key k1", code, body)
		}
		ids = append(ids, a.ID)
	}
	if ids[0] != "stub-1" || ids[1] != "stub-2" {
		t.Errorf("ids %v, want [stub-1 stub-2]", ids)
	}
	want := map[string]int{"k1": 2, "k2": 0}
	if got := s.Applied([]string{"k1", "k2"}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Applied: %v, want %v", got, want)
	}
	t.Setenv(EnvStub, s.URL())
	got, err := StubApplied()(context.Background(), Stack{}, []string{"k1", "k2"})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StubApplied: %v, %v, want %v", got, err, want)
	}
}

func TestStubLookup(t *testing.T) {
	s := startStub(t)
	key := "bk 1/a" // the path carries it escaped
	u := s.URL() + "/messages/bk%201%2Fa"
	if code, body := stubDo(t, "GET", u, "", nil); code != http.StatusNotFound {
		t.Fatalf("GET before any POST: %d %s, want 404", code, body)
	}
	_, first := stubDo(t, "POST", s.URL()+"/messages", key, nil)
	stubDo(t, "POST", s.URL()+"/messages", key, nil)
	if code, body := stubDo(t, "GET", u, "", nil); code != http.StatusOK || body != first || !strings.Contains(body, `"stub-1"`) {
		t.Errorf("GET after: %d %s, want 200 %s", code, body, first)
	}
	if code, _ := stubDo(t, "GET", s.URL()+"/messages/other", "", nil); code != http.StatusNotFound {
		t.Errorf("GET of another key: %d, want 404", code)
	}
}

func TestStubRefuses(t *testing.T) {
	s := startStub(t)
	if code, _ := stubDo(t, "POST", s.URL()+"/messages", "", strings.NewReader("x")); code != http.StatusBadRequest {
		t.Errorf("POST without Idempotency-Key: %d, want 400", code)
	}
	if code, _ := stubDo(t, "POST", s.URL()+"/messages", "big", strings.NewReader(strings.Repeat("x", 1<<20+1))); code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of a body over 1 MiB: %d, want 413", code)
	}
	if code, _ := stubDo(t, "PUT", s.URL()+"/messages", "k", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d, want 405", code)
	}
	if code, _ := stubDo(t, "POST", s.URL()+"/_kit/applied", "k", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /_kit/applied: %d, want 405", code)
	}
	if got := s.Applied([]string{"", "big", "k"}); got[""]+got["big"]+got["k"] != 0 {
		t.Errorf("Applied after refused requests: %v, want none", got)
	}
	if _, body := stubDo(t, "POST", s.URL()+"/messages", "k", nil); !strings.Contains(body, `"stub-1"`) {
		t.Errorf("first counted POST: %s, want id stub-1", body)
	}
	// A non-200 of /_kit/applied is StubApplied's error, with the status.
	t.Setenv(EnvStub, s.URL()+"/_kit/nothing")
	if _, err := StubApplied()(context.Background(), Stack{}, []string{"k"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("StubApplied of a 404: %v, want an error with 404", err)
	}
}

func TestStubConcurrent(t *testing.T) {
	s := startStub(t)
	const goroutines, posts = 50, 10
	var wg sync.WaitGroup
	ids := make([][]string, goroutines)
	for i := range ids {
		wg.Go(func() {
			for range posts {
				req, _ := http.NewRequest("POST", s.URL()+"/pay", strings.NewReader("{}"))
				req.Header.Set("Idempotency-Key", "c")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var a struct{ ID string }
				json.NewDecoder(resp.Body).Decode(&a)
				resp.Body.Close()
				ids[i] = append(ids[i], a.ID)
			}
		})
	}
	wg.Wait()
	if n := s.Applied([]string{"c"})["c"]; n != goroutines*posts {
		t.Errorf("Applied after %d concurrent POSTs: %d", goroutines*posts, n)
	}
	seen := map[string]bool{}
	for _, g := range ids {
		for _, id := range g {
			seen[id] = true
		}
	}
	if len(seen) != goroutines*posts || seen[""] {
		t.Errorf("%d distinct ids of %d answers", len(seen), goroutines*posts)
	}
}

func TestStubAppliedChunks(t *testing.T) {
	s := startStub(t)
	var longest int
	var mu sync.Mutex
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		longest = max(longest, len(r.RequestURI))
		mu.Unlock()
		s.serve(w, r)
	}))
	defer front.Close()
	var keys []string
	for i := range 500 {
		keys = append(keys, fmt.Sprintf("booking-%04d-%s", i, strings.Repeat("é", 10)))
	}
	stubDo(t, "POST", front.URL+"/m", keys[499], nil)
	t.Setenv(EnvStub, front.URL+"/")
	got, err := StubApplied()(context.Background(), Stack{}, keys)
	if err != nil || len(got) != 500 || got[keys[499]] != 1 || got[keys[0]] != 0 {
		t.Fatalf("StubApplied of 500 keys: %d counts, %v", len(got), err)
	}
	if longest >= 6<<10 || longest < 4<<10 {
		t.Errorf("longest request URI %d bytes, want 4 KB..6 KB", longest)
	}
}

func TestStubAppliedWantsEveryKey(t *testing.T) {
	partial := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"a":1}`)
	}))
	defer partial.Close()
	t.Setenv(EnvStub, partial.URL)
	if got, err := StubApplied()(context.Background(), Stack{}, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("StubApplied of an answer without b: %v, %v, want an error naming b", got, err)
	}
}

func TestStartStubRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if s, err := StartStub(addr); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
			if s != nil {
				s.Close()
			}
			t.Errorf("StartStub(%q): %v, want refused", addr, err)
		}
	}
}

func TestStubAppliedWithoutEnv(t *testing.T) {
	t.Setenv(EnvStub, "")
	if _, err := StubApplied()(context.Background(), Stack{}, []string{"k"}); err == nil || !strings.Contains(err.Error(), "SQSIDEM_KIT_STUB") {
		t.Errorf("StubApplied without %s: %v, want an error naming it", EnvStub, err)
	}
}

func TestStubCloseIdempotent(t *testing.T) {
	s, err := StartStub("localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %s, want http://127.0.0.1:PORT", s.URL())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := http.Get(s.URL() + "/_kit/applied"); err == nil {
		t.Error("the stub answers after Close")
	}
}

// TestStubPlans: a key's plan answers its POSTs in turn, the last
// repeated: a refusal applies nothing, a lost reply and a late one apply
// and leave the caller without an answer, an honoured key is applied
// once; the lookup answers what was applied.
func TestStubPlans(t *testing.T) {
	s := startStub(t)
	t.Setenv(EnvStub, s.URL())
	post := func(key string, timeout time.Duration) (int, error) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/hooks", strings.NewReader("{}"))
		req.Header.Set("Idempotency-Key", key)
		req.GetBody = nil
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req) // no reused connection
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	plans := map[string]StubPlan{
		"refused":  {Answers: []StubAnswer{StubRefuse(422), StubApply}},
		"failing":  {Answers: []StubAnswer{StubRefuse(503)}},
		"lost":     {Answers: []StubAnswer{StubLose, StubApply}},
		"late":     {Answers: []StubAnswer{StubSlow, StubApply}},
		"honoured": {Answers: []StubAnswer{StubLose, StubApply}, Honour: true},
	}
	for k, p := range plans {
		if err := SetStubPlan(t.Context(), k, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		key     string
		codes   []int // 0: no answer (an error)
		applied int
	}{
		{key: "refused", codes: []int{422, 201, 201}, applied: 2},
		{key: "failing", codes: []int{503, 503}, applied: 0},
		{key: "lost", codes: []int{0, 201}, applied: 2},
		{key: "late", codes: []int{0, 201}, applied: 2},
		{key: "honoured", codes: []int{0, 200, 200}, applied: 1},
		{key: "unplanned", codes: []int{201}, applied: 1},
	} {
		for i, want := range tc.codes {
			// The late answer comes once the caller gave up: here, at its
			// 300 ms deadline; the others at once (a minute bounds them).
			timeout := time.Minute
			if tc.key == "late" && i == 0 {
				timeout = 300 * time.Millisecond
			}
			code, err := post(tc.key, timeout)
			if (want == 0) != (err != nil) || code != want {
				t.Errorf("%s: POST %d: %d, %v; want %d", tc.key, i+1, code, err, want)
			}
		}
		if n := s.Applied([]string{tc.key})[tc.key]; n != tc.applied {
			t.Errorf("%s: applied %d times, want %d", tc.key, n, tc.applied)
		}
		lookup, _ := stubDo(t, "GET", s.URL()+"/hooks/"+tc.key, "", nil)
		if want := map[bool]int{true: 200, false: 404}[tc.applied > 0]; lookup != want {
			t.Errorf("%s: lookup %d, want %d", tc.key, lookup, want)
		}
	}
}

func TestStubPlanRefused(t *testing.T) {
	s := startStub(t)
	for _, body := range []string{`{"answers":["maybe"]}`, `{"answers":["refuse:200"]}`, `not json`} {
		if code, _ := stubDo(t, "PUT", s.URL()+"/_kit/plans/k", "", strings.NewReader(body)); code != http.StatusBadRequest {
			t.Errorf("PUT %s: %d, want 400", body, code)
		}
	}
	if code, _ := stubDo(t, "PUT", s.URL()+"/_kit/plans/", "", strings.NewReader(`{}`)); code != http.StatusBadRequest {
		t.Errorf("PUT without a key: %d, want 400", code)
	}
	t.Setenv(EnvStub, "")
	if err := SetStubPlan(t.Context(), "k", StubPlan{}); err == nil || !strings.Contains(err.Error(), EnvStub) {
		t.Errorf("SetStubPlan without %s: %v", EnvStub, err)
	}
}

// TestStubAppliedSaysSo: the kit learns that the probe is the stub's,
// wrapped or not, without asking the stub; another probe is not.
func TestStubAppliedSaysSo(t *testing.T) {
	t.Setenv(EnvStub, "http://127.0.0.1:1")
	wrapped := func(ctx context.Context, s Stack, keys []string) (map[string]int, error) {
		return StubApplied()(ctx, s, keys)
	}
	other := func(context.Context, Stack, []string) (map[string]int, error) { return nil, nil }
	for _, tc := range []struct {
		name  string
		probe func(context.Context, Stack, []string) (map[string]int, error)
		skip  string
	}{
		{"StubApplied", StubApplied(), ""},
		{"wrapped", wrapped, ""},
		{"another probe", other, "App.Applied is not kit.StubApplied"},
	} {
		if got := partnerSkip(t.Context(), App{Applied: tc.probe}, Stack{}); (tc.skip == "") != (got == "") || !strings.Contains(got, tc.skip) {
			t.Errorf("%s: skip %q, want %q", tc.name, got, tc.skip)
		}
	}
	t.Setenv(EnvStub, "")
	if got := partnerSkip(t.Context(), App{Applied: StubApplied()}, Stack{}); !strings.Contains(got, EnvStub+" is not set") {
		t.Errorf("no stub: skip %q", got)
	}
}
