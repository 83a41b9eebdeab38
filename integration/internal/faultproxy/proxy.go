// Package faultproxy is an HTTP proxy in front of a DynamoDB endpoint (any
// AWS JSON-protocol endpoint) that counts requests per operation and, when
// told, fails them the way DynamoDB does: 5xx, throttling, lost
// acknowledgements (the request is applied, its response replaced by a
// 500, so the client retries a write that already happened), and added
// latency.
//
// The Lambdas under test are separate processes, so the wire is the only
// honest place to count their requests and to break them.
package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is what the proxy does with one request.
type Kind int

const (
	// Pass forwards the request and its response.
	Pass Kind = iota
	// Fail answers 500 InternalServerError without forwarding.
	Fail
	// Throttle answers 400 ThrottlingException without forwarding.
	Throttle
	// ThroughputExceeded answers 400 ProvisionedThroughputExceededException
	// without forwarding.
	ThroughputExceeded
	// LoseAck forwards the request (DynamoDB applies it), then answers 500
	// instead of its response.
	LoseAck
)

var kindNames = [...]string{Pass: "pass", Fail: "fail", Throttle: "throttle", ThroughputExceeded: "throughput", LoseAck: "lose-ack"}

func (k Kind) String() string { return kindNames[k] }

// Action is the decision for one request.
type Action struct {
	Kind  Kind
	Delay time.Duration // before anything else
}

// Request is what a Decider sees of a request.
type Request struct {
	Op   string // operation, e.g. "UpdateItem"
	Body []byte // the JSON request
	Seq  int64  // 1 for the first request the proxy saw
}

// Decider decides what happens to a request. It is called concurrently.
type Decider func(Request) Action

// Proxy forwards to a target URL, counts, and applies its Decider.
type Proxy struct {
	srv    *http.Server
	url    string
	target *url.URL
	client *http.Client
	decide atomic.Pointer[Decider]
	seq    atomic.Int64

	mu     sync.Mutex
	counts map[string]int // per operation, every request received
	faults map[Kind]int   // per injected kind
}

// Start listens on a free 127.0.0.1 port and forwards to target. Every
// request passes until SetDecider.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q: not a URL", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		url:    "http://" + ln.Addr().String(),
		target: u,
		// Enough idle connections for every concurrent client: the proxy
		// must not be the bottleneck it measures.
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: 90 * time.Second,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		}},
		counts: map[string]int{},
		faults: map[Kind]int{},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's endpoint, to use instead of the target's.
func (p *Proxy) URL() string { return p.url }

// SetDecider sets what happens to the requests from now on; nil passes
// everything.
func (p *Proxy) SetDecider(d Decider) {
	if d == nil {
		p.decide.Store(nil)
		return
	}
	p.decide.Store(&d)
}

// Counts returns the requests received per operation, injected faults
// included.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Faults returns the faults injected per kind.
func (p *Proxy) Faults() map[Kind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.faults)
}

// Total returns the requests of the given operations, or of all operations
// when none is given.
func (p *Proxy) Total(ops ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for op, c := range p.counts {
		if len(ops) == 0 || slices.Contains(ops, op) {
			n += c
		}
	}
	return n
}

// Reset sets every count to zero.
func (p *Proxy) Reset() {
	p.mu.Lock()
	clear(p.counts)
	clear(p.faults)
	p.mu.Unlock()
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// operation is the operation of a request: "DynamoDB_20120810.PutItem" →
// "PutItem".
func operation(r *http.Request) string {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	if op == "" {
		op = "unknown"
	}
	return op
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	req := Request{Op: operation(r), Body: body, Seq: p.seq.Add(1)}
	var act Action
	if d := p.decide.Load(); d != nil {
		act = (*d)(req)
	}
	p.mu.Lock()
	p.counts[req.Op]++
	if act.Kind != Pass {
		p.faults[act.Kind]++
	}
	p.mu.Unlock()

	if act.Delay > 0 {
		t := time.NewTimer(act.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	switch act.Kind {
	case Fail:
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected: internal server error")
		return
	case Throttle:
		writeError(w, http.StatusBadRequest, "ThrottlingException", "injected: rate of requests exceeds the allowed throughput")
		return
	case ThroughputExceeded:
		writeError(w, http.StatusBadRequest, "ProvisionedThroughputExceededException", "injected: the level of configured provisioned throughput for the table was exceeded")
		return
	}
	resp, respBody, err := p.forward(r, body)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusBadGateway, "InternalServerError", "faultproxy: "+err.Error())
		}
		return
	}
	if act.Kind == LoseAck {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected: response lost after the request was applied")
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

// forward sends the request on and reads the whole response.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target.JoinPath(r.URL.Path).String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	out.URL.RawQuery = r.URL.RawQuery
	for k, vs := range r.Header {
		out.Header[k] = vs
	}
	out.Host = p.target.Host
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, respBody, nil
}

// writeError answers as DynamoDB does, checksum included: without
// X-Amz-Crc32 the SDK would warn about every injected error.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	body := fmt.Appendf(nil, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, code, msg)
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-ErrorType", code)
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	h.Set("X-Amzn-RequestId", "faultproxy-"+strconv.Itoa(status))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
