package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// StubPlan is how the stub answers the POSTs of one key: the remote
// system's failures, which a consumer's effect must classify (a refusal is
// definite, anything else may have been applied) and its guarantee must
// survive. The kit sets one per key before it sends the key's message
// (SetStubPlan); a key without a plan is applied and answered 201 on every
// POST.
type StubPlan struct {
	// Answers answer the key's POSTs in turn, the last one repeated: e.g.
	// [StubRefuse(503), StubApply] is a 503 once, then applied. Empty:
	// StubApply.
	Answers []StubAnswer `json:"answers"`
	// Honour makes the stub deduplicate by the key, as a partner honouring
	// Idempotency-Key does: a POST of a key already applied is answered
	// 200 with the first answer and not counted. false (the default)
	// counts every POST, so that a consumer calling twice shows 2.
	Honour bool `json:"honour,omitempty"`
}

// StubAnswer is one answer of a StubPlan.
type StubAnswer string

const (
	// StubApply applies the POST (unless Honour finds the key applied)
	// and answers 201.
	StubApply StubAnswer = "apply"
	// StubLose applies the POST, then drops the connection without a
	// reply: the caller cannot know (a reset, EOF).
	StubLose StubAnswer = "lose"
	// StubSlow applies the POST, then answers only once the caller has
	// given up (its deadline), or after StubSlowest.
	StubSlow StubAnswer = "slow"
)

// StubRefuse is the answer status code (400 to 599) without applying
// anything: a 4xx is a refusal the effect may call definite, a 5xx the
// remote's failure before it did anything, which the caller cannot tell
// from one after.
func StubRefuse(status int) StubAnswer { return StubAnswer("refuse:" + strconv.Itoa(status)) }

// StubSlowest bounds the wait of a StubSlow answer, for a caller with no
// deadline at all.
const StubSlowest = time.Minute

// stubPlansPath is where PUT sets a key's plan: stubPlansPath + key,
// escaped.
const stubPlansPath = "/_kit/plans/"

// refusal is the status code of a StubRefuse answer.
func (a StubAnswer) refusal() (int, bool) {
	code, ok := strings.CutPrefix(string(a), "refuse:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(code)
	return n, err == nil && n >= 400 && n <= 599
}

func (a StubAnswer) valid() bool {
	_, refused := a.refusal()
	return refused || a == StubApply || a == StubLose || a == StubSlow
}

// stubPlan is a key's plan and how many of its POSTs it answered.
type stubPlan struct {
	StubPlan
	posts int
}

// next is the answer to key's next POST and whether its plan honours
// the key. s.mu is held.
func (s *Stub) next(key string) (StubAnswer, bool) {
	p := s.plans[key]
	if p == nil || len(p.Answers) == 0 {
		return StubApply, p != nil && p.Honour
	}
	a := p.Answers[min(p.posts, len(p.Answers)-1)]
	p.posts++
	return a, p.Honour
}

// Plan sets how the stub answers key's POSTs from now on (see StubPlan).
func (s *Stub) Plan(key string, p StubPlan) error {
	for _, a := range p.Answers {
		if !a.valid() {
			return fmt.Errorf("kit: stub plan for %q: answer %q is none of apply, lose, slow, refuse:<400..599>", key, a)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans[key] = &stubPlan{StubPlan: p}
	return nil
}

// putPlan is PUT /_kit/plans/<key>.
func (s *Stub) putPlan(w http.ResponseWriter, r *http.Request) {
	key, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), stubPlansPath))
	if err != nil || key == "" {
		http.Error(w, "PUT "+stubPlansPath+"<key>: no key", http.StatusBadRequest)
		return
	}
	var p StubPlan
	if err := json.NewDecoder(io.LimitReader(r.Body, stubMaxBody)).Decode(&p); err != nil {
		http.Error(w, "the plan: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.Plan(key, p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// stubHangUp closes the request's connection without an answer.
func stubHangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// No connection to take (HTTP/2): end the handler without a
		// status line, which the server turns into a reset stream.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// SetStubPlan sets key's plan on the stub at $SQSIDEM_KIT_STUB (the stub
// onlocalstack -stub started, in another process than the test's).
func SetStubPlan(ctx context.Context, key string, p StubPlan) error {
	base := os.Getenv(EnvStub)
	if base == "" {
		return fmt.Errorf("kit: %s is not set: the base URL of the kit's stub partner (onlocalstack -stub sets it)", EnvStub)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("kit: stub plan: %w", err)
	}
	u := strings.TrimRight(base, "/") + stubPlansPath + url.PathEscape(key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("kit: stub (%s): %w", EnvStub, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kit: stub: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("kit: stub PUT %s: %s: %.200s (a stub older than this kit?)", stubPlansPath, resp.Status, body)
	}
	return nil
}
