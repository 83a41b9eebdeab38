// Package partner is the remote system of the proof: a small HTTP
// "partner" (a payment or SMS provider) that an effect calls with an
// Idempotency-Key header. It records every call by key, answers whether
// a key's effect happened, and injects the faults that make a remote
// effect's outcome unknown: it refuses, applies and loses the reply, is
// slow past the caller's deadline, or applies a repeat again.
//
// It listens on 127.0.0.1 and a free port, for the tests, the demo and the
// chaos run; the Lambdas they start reach it at URL.
//
//	POST P               Idempotency-Key: K, any body → 200 {"key","id","applied"}
//	GET  P/K             → 200 {"key","id","applied":N} when K happened, 404 otherwise
//	GET  P               → 200 {"K":N, ...}: every key's count (the probes' read)
//	GET  /stats          → 200 {"calls":N,"applied":N,"keys":N,"lookups":N,
//	                        "refused":N,"lostReplies":N,"slowReplies":N,
//	                        "downCalls":N,"downLookups":N} (Stats)
//
// P is /effects, and the path of every effect setting whose suite value
// names the partner (contract.Setting.Suite: contract.SuitePartner +
// "/v1/captures" serves /v1/captures), and any path given with Paths: a
// fork's setting may name the endpoint its provider has, and the lookup
// of a Reconcile is GET of that path and "/<key>". Every path shares one
// count per key.
//
// Every fault it injects is also logged by key (Injected), so that a run
// can tell which keys' calls had an unknown outcome and why.
package partner

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
)

// KeyHeader is the header that carries the idempotency key.
const KeyHeader = "Idempotency-Key"

// Faults are what the partner does wrong, each a probability per call
// (0: never, 1: always).
type Faults struct {
	// Refuse answers 503 without applying: nothing took place.
	Refuse float64
	// LoseReply applies the effect, then closes the connection in the
	// middle of its answer: the caller sees a broken connection. (Cut
	// after the status line, not before its first byte: Go's transport
	// replays a request with an Idempotency-Key on a reused connection the
	// server closed before answering anything — net/http counts the header
	// as a promise of idempotency — which a partner that honours the key
	// absorbs, and one that ignores it (IgnoreKey) would count as a
	// second effect of one call that no receipt can see. A reply lost
	// half way is lost for every client.)
	LoseReply float64
	// Slow applies the effect, then waits SlowFor before answering: past
	// the caller's deadline, the caller sees a timeout.
	Slow    float64
	SlowFor time.Duration
	// Down refuses every call (503) and every lookup: the partner is out.
	Down bool
}

// Server is the partner. Its zero value is not usable: Start one.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	addr string

	paths []string // served as /effects is (Paths, SuitePaths)

	mu      sync.Mutex
	honour  bool // a repeat of a key answers the first answer, without applying again
	faults  Faults
	rng     *rand.Rand
	calls   map[string]int // by key: every POST
	applied map[string]int // by key: every time the effect took place
	lookups int            // GET /effects/K
	downGet int            // lookups refused while down
	log     []Injection
}

// Kinds of Injection.
const (
	InjectRefused   = "refused"    // 503 before applying: nothing took place
	InjectLostReply = "lost-reply" // applied, its reply cut: the connection closed
	InjectSlow      = "slow"       // applied, answered SlowFor later (or never, the caller gone)
	InjectDown      = "down"       // 503 while Down: nothing took place
)

// Injection is one fault the partner injected into a call of Key.
type Injection struct {
	At   time.Time
	Key  string
	Kind string // InjectRefused, InjectLostReply, InjectSlow or InjectDown
	// Applied says whether the call took place all the same (lost reply,
	// slow): its caller cannot know.
	Applied bool
}

// Stats are the partner's counts (GET /stats).
type Stats struct {
	Calls       int `json:"calls"`   // POSTs, repeats included
	Applied     int `json:"applied"` // effects that took place
	Keys        int `json:"keys"`    // keys applied at least once
	Lookups     int `json:"lookups"` // GET /effects/K, refused ones included
	Refused     int `json:"refused"` // calls answered 503 by the Refuse fault
	LostReplies int `json:"lostReplies"`
	SlowReplies int `json:"slowReplies"`
	DownCalls   int `json:"downCalls"`   // calls refused while Down
	DownLookups int `json:"downLookups"` // lookups refused while Down
}

// Option configures a Server.
type Option func(*Server)

// IgnoreKey makes the partner apply every call, repeats included, as a
// system without idempotency keys does: each double effect shows.
func IgnoreKey() Option { return func(s *Server) { s.honour = false } }

// WithFaults sets the faults from the start.
func WithFaults(f Faults) Option { return func(s *Server) { s.faults = f } }

// WithSeed seeds the faults' draws.
func WithSeed(seed uint64) Option {
	return func(s *Server) { s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
}

// At makes the partner listen on addr (host:port) instead of a free port
// of 127.0.0.1: where a deployed stack's consumer was told to call it
// (contract.SuitePartner).
func At(addr string) Option { return func(s *Server) { s.addr = addr } }

// Paths adds paths the partner serves as it serves /effects (the package
// comment): an effect's endpoint that no setting's suite value names.
func Paths(paths ...string) Option { return func(s *Server) { s.paths = append(s.paths, paths...) } }

// DefaultPath is the path the partner always serves.
const DefaultPath = "/effects"

// SuitePaths are the paths of the effect's settings whose suite value
// names the partner (contract.SuitePartner), "/" for one that is the
// partner's address itself.
func SuitePaths(settings []contract.Setting) []string {
	var out []string
	for _, st := range settings {
		if rest, ok := strings.CutPrefix(st.Suite, contract.SuitePartner); ok {
			p, _, _ := strings.Cut(rest, "?")
			out = append(out, "/"+strings.Trim(p, "/"))
		}
	}
	return out
}

// Start listens on 127.0.0.1 and a free port and serves until Close. By
// default it honours the idempotency key.
func Start(opts ...Option) (*Server, error) {
	s := &Server{addr: "127.0.0.1:0", honour: true, rng: rand.New(rand.NewPCG(1, 2)), calls: map[string]int{}, applied: map[string]int{}}
	for _, opt := range opts {
		opt(s)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("partner: listen: %w", err)
	}
	s.ln = ln
	mux := http.NewServeMux()
	served := map[string]bool{}
	for _, p := range append([]string{DefaultPath}, append(SuitePaths(contract.EffectSettings), s.paths...)...) {
		if p = "/" + strings.Trim(p, "/"); served[p] || p == "/stats" {
			continue
		}
		served[p] = true
		root, base := p, p+"/"
		if p == "/" {
			root, base = "/{$}", "/"
		}
		mux.HandleFunc("POST "+root, s.post)
		if p != "/" {
			mux.HandleFunc("POST "+base+"{$}", s.post) // a setting written with a trailing slash
		}
		mux.HandleFunc("GET "+base+"{key}", s.lookup)
		mux.HandleFunc("GET "+root, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Applied()) })
	}
	mux.HandleFunc("GET /stats", s.stats)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is where the partner answers, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Point returns env with every value that names the suite's partner
// (begins with contract.SuitePartner, as the test profiles' settings do)
// pointed at this one instead.
func (s *Server) Point(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if rest, ok := strings.CutPrefix(v, contract.SuitePartner); ok {
			v = s.URL() + rest
		}
		out[k] = v
	}
	return out
}

// Close stops the partner.
func (s *Server) Close() error { return s.srv.Close() }

// SetFaults replaces the faults; calls under way keep theirs.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Applied returns how many times each key's effect took place (keys never
// applied are absent).
func (s *Server) Applied() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.applied))
	for k, n := range s.applied {
		out[k] = n
	}
	return out
}

// Injected returns every fault injected so far, in order.
func (s *Server) Injected() []Injection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Injection(nil), s.log...)
}

// Faults returns the faults in force.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// Stats returns the partner's counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Keys: len(s.applied), Lookups: s.lookups, DownLookups: s.downGet}
	for _, n := range s.calls {
		st.Calls += n
	}
	for _, n := range s.applied {
		st.Applied += n
	}
	for _, in := range s.log {
		switch in.Kind {
		case InjectRefused:
			st.Refused++
		case InjectLostReply:
			st.LostReplies++
		case InjectSlow:
			st.SlowReplies++
		case InjectDown:
			st.DownCalls++
		}
	}
	return st
}

// Calls returns how many calls key's effect had, repeats included.
func (s *Server) Calls(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// answer is the body of POST /effects and GET /effects/K.
type answer struct {
	Key     string `json:"key"`
	ID      string `json:"id"`
	Applied int    `json:"applied"`
}

func idOf(key string) string { return fmt.Sprintf("fx_%x", fnv64(key)) }

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// draw decides, under s.mu, which fault befalls one call of key, and logs
// it.
func (s *Server) draw(key string) (refuse, lose bool, slow time.Duration) {
	f := s.faults
	kind := ""
	switch x := s.rng.Float64(); {
	case f.Down:
		kind, refuse = InjectDown, true
	case x < f.Refuse:
		kind, refuse = InjectRefused, true
	case x < f.Refuse+f.LoseReply:
		kind, lose = InjectLostReply, true
	case x < f.Refuse+f.LoseReply+f.Slow:
		kind, slow = InjectSlow, f.SlowFor
	}
	if kind != "" {
		s.log = append(s.log, Injection{At: time.Now(), Key: key, Kind: kind, Applied: !refuse})
	}
	return refuse, lose, slow
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSpace(r.Header.Get(KeyHeader))
	if key == "" {
		http.Error(w, `{"error":"no Idempotency-Key"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[key]++
	refuse, lose, slow := s.draw(key)
	if refuse {
		s.mu.Unlock()
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	if !s.honour || s.applied[key] == 0 {
		s.applied[key]++
	}
	a := answer{Key: key, ID: idOf(key), Applied: s.applied[key]}
	s.mu.Unlock()

	if lose {
		// Applied, and the reply is lost: the connection closes after
		// the status line (see Faults.LoseReply).
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_, _ = conn.Write([]byte("HTTP/1.1 200 OK\r\n"))
			_ = conn.Close()
			return
		}
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	if slow > 0 {
		select {
		case <-r.Context().Done():
			return // the caller gave up: applied, unanswered
		case <-time.After(slow):
		}
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	s.mu.Lock()
	down, n := s.faults.Down, s.applied[key]
	s.lookups++
	if down {
		s.downGet++
	}
	s.mu.Unlock()
	switch {
	case down:
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
	case n == 0:
		writeJSON(w, http.StatusNotFound, answer{Key: key})
	default:
		writeJSON(w, http.StatusOK, answer{Key: key, ID: idOf(key), Applied: n})
	}
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
