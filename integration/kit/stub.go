package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvStub is the environment variable holding the base URL of the kit's
// stub partner for the test process (set by onlocalstack -stub).
const EnvStub = "SQSIDEM_KIT_STUB"

// stubMaxBody bounds the body of a request the stub reads.
const stubMaxBody = 1 << 20

// stubMaxQuery bounds the query of a /_kit/applied request StubApplied
// sends, so that its URL stays under 6 KB.
const stubMaxQuery = 5 << 10

// Stub is a partner on 127.0.0.1 for an effect that is an HTTP call (an
// SMS, an email, a payment): it counts how often each key's effect was
// applied, so that a probe ([StubApplied]) sees a consumer that calls
// twice, and it fails the way a remote system does when the kit asks it
// to (a [StubPlan] per key). Its protocol, which a team points its
// effect's client at:
//
//   - POST to any path not under /_kit/, with the header Idempotency-Key: K,
//     applies the effect for K and answers 201 with the JSON
//     {"id":"stub-<n>","key":"K"}, n a sequence number of the POSTs: K's
//     count goes up by one on every such POST (the stub does not
//     deduplicate by the header, unless K's plan honours it). Without the
//     header: 400, nothing counted. A body over 1 MiB: 413, nothing
//     counted. K's plan, if it has one, decides the answer instead (see
//     StubPlan): a refusal, a lost reply, a late one.
//   - GET <any prefix>/K (the last path segment, unescaped, is the key):
//     200 with the answer of K's first applied POST if K was applied, 404
//     otherwise. This is a consumer's lookup (Reconcile): a client that
//     POSTs /messages GETs /messages/{key}.
//   - GET /_kit/applied?key=a&key=b: 200 with the JSON object of every
//     asked key's count, {"a":1,"b":0}.
//   - PUT /_kit/plans/K with a StubPlan as JSON: K's POSTs from now on are
//     answered by the plan (204; 400 for a plan it cannot follow). The kit
//     sets them before it sends K's message ([SetStubPlan]).
//   - Any other method: 405. Other paths under /_kit/: 404.
//
// An Authorization header is accepted and ignored. A Stub is safe for
// concurrent use.
type Stub struct {
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	seq     int                  // POSTs applied
	applied map[string]int       // key -> POSTs applied
	first   map[string]stubOp    // key -> its first applied POST
	plans   map[string]*stubPlan // key -> how its POSTs are answered

	closeOnce sync.Once
	closeErr  error
}

// stubOp is a key's first POST: the answer, and what it was sent.
type stubOp struct {
	answer []byte
	path   string
	size   int64
}

// StartStub starts a Stub listening on addr, host:port. addr "" or
// "127.0.0.1:0" is a free port of 127.0.0.1; the host must be 127.0.0.1
// or localhost (the stub is for the test's machine only), any other is
// refused. Close stops it.
func StartStub(addr string) (*Stub, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("kit: stub address %q: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return nil, fmt.Errorf("kit: stub address %q: host %q refused, the stub listens on 127.0.0.1 only", addr, host)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return nil, fmt.Errorf("kit: stub: %w", err)
	}
	s := &Stub{ln: ln, applied: map[string]int{}, first: map[string]stubOp{}, plans: map[string]*stubPlan{}}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      StubSlowest + 30*time.Second, // a slow answer's wait, then its write
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	go s.srv.Serve(ln) // returns http.ErrServerClosed on Close
	return s, nil
}

// URL is the stub's base URL, http://127.0.0.1:PORT.
func (s *Stub) URL() string { return "http://" + s.ln.Addr().String() }

// Applied is how often each of keys was applied (0 for a key never
// applied); every key is in the map.
func (s *Stub) Applied(keys []string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(keys))
	for _, k := range keys {
		m[k] = s.applied[k]
	}
	return m
}

// Close stops the stub, dropping its open connections. It is idempotent:
// later calls return the first one's result.
func (s *Stub) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.srv.Close() })
	return s.closeErr
}

// serve answers a request by the protocol of the Stub's doc comment.
func (s *Stub) serve(w http.ResponseWriter, r *http.Request) {
	kitPath := strings.HasPrefix(r.URL.Path, "/_kit/")
	switch {
	case r.Method == http.MethodPost && !kitPath:
		s.apply(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/_kit/applied":
		stubJSON(w, http.StatusOK, s.Applied(r.URL.Query()["key"]))
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, stubPlansPath):
		s.putPlan(w, r)
	case r.Method == http.MethodGet && kitPath:
		http.NotFound(w, r)
	case r.Method == http.MethodGet:
		s.lookup(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, PUT")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// apply answers a POST for its Idempotency-Key: by the key's plan, else
// applied and 201.
func (s *Stub) apply(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "missing header Idempotency-Key", http.StatusBadRequest)
		return
	}
	size, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, stubMaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body over 1 MiB", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		}
		return
	}
	s.mu.Lock()
	answer, honour := s.next(key)
	if code, refused := answer.refusal(); refused {
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("the kit's plan for this key refuses this request (%d): nothing applied", code), code)
		return
	}
	first, seen := s.first[key]
	reply := first.answer
	if !seen || !honour {
		s.seq++
		reply, _ = json.Marshal(map[string]string{"id": fmt.Sprintf("stub-%d", s.seq), "key": key})
		s.applied[key]++
	}
	if !seen {
		s.first[key] = stubOp{answer: reply, path: r.URL.Path, size: size}
	}
	s.mu.Unlock()
	switch answer {
	case StubLose:
		stubHangUp(w)
		return
	case StubSlow:
		// Until the caller gives up (its deadline), or StubSlowest.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(StubSlowest):
		}
	}
	status := http.StatusCreated
	if seen && honour {
		status = http.StatusOK // the first answer, replayed
	}
	stubWrite(w, status, reply)
}

// lookup answers a key's first POST: the key is the last path segment.
func (s *Stub) lookup(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	key, err := url.PathUnescape(p[strings.LastIndex(p, "/")+1:])
	if err != nil || key == "" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	op, ok := s.first[key]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	stubWrite(w, http.StatusOK, op.answer)
}

func stubJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	stubWrite(w, status, b)
}

func stubWrite(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// StubApplied is App.Applied for an effect that calls the stub: it reads
// the counts from the stub at $SQSIDEM_KIT_STUB (an error naming the
// variable when unset). The variable is read at each call, the keys sent
// in requests of under 6 KB; the Stack is not used.
func StubApplied() func(ctx context.Context, s Stack, keys []string) (map[string]int, error) {
	return func(ctx context.Context, _ Stack, keys []string) (map[string]int, error) {
		if isStub, ok := ctx.Value(stubProbeKey{}).(*bool); ok {
			*isStub = true // Run asks (partner.go)
			return map[string]int{}, nil
		}
		base := os.Getenv(EnvStub)
		if base == "" {
			return nil, fmt.Errorf("kit: %s is not set: the base URL of the kit's stub partner (onlocalstack -stub sets it)", EnvStub)
		}
		endpoint := strings.TrimRight(base, "/") + "/_kit/applied?"
		applied := make(map[string]int, len(keys))
		for len(keys) > 0 {
			// As many keys as fit in stubMaxQuery, at least one.
			n, size := 0, 0
			for ; n < len(keys); n++ {
				size += len("&key=") + len(url.QueryEscape(keys[n]))
				if n > 0 && size > stubMaxQuery {
					break
				}
			}
			chunk := url.Values{"key": keys[:n]}
			if err := stubGet(ctx, endpoint+chunk.Encode(), keys[:n], applied); err != nil {
				return nil, err
			}
			keys = keys[n:]
		}
		return applied, nil
	}
}

// stubGet reads a /_kit/applied URL's counts of keys into applied.
func stubGet(ctx context.Context, u string, keys []string, applied map[string]int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("kit: stub (%s): %w", EnvStub, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kit: stub: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, stubMaxBody))
	if err != nil {
		return fmt.Errorf("kit: stub GET /_kit/applied: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kit: stub GET /_kit/applied: %s: %.200s", resp.Status, body)
	}
	var m map[string]int
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("kit: stub GET /_kit/applied: %w", err)
	}
	for _, k := range keys {
		n, ok := m[k]
		if !ok {
			return fmt.Errorf("kit: stub GET /_kit/applied: no count for key %q", k)
		}
		applied[k] = n
	}
	return nil
}
