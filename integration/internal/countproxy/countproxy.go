// Package countproxy is a reverse proxy in front of an AWS JSON-protocol
// endpoint (DynamoDB, SQS) that counts requests per operation. The Lambdas
// under test are separate processes, so counting on the wire is the only
// honest way to report "DynamoDB requests per message".
package countproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Proxy forwards to a target URL and counts operations.
type Proxy struct {
	srv *http.Server
	url string

	mu     sync.Mutex
	counts map[string]int
}

// Start listens on a free 127.0.0.1 port and forwards to target.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("countproxy: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("countproxy: listen: %w", err)
	}
	p := &Proxy{url: "http://" + ln.Addr().String(), counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A Lambda killed or timed out mid-request cancels it; that is the test
	// working, not a proxy problem worth a log line.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// count records the operation: "DynamoDB_20120810.PutItem" -> "PutItem".
func (p *Proxy) count(r *http.Request) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	if op == "" {
		op = "unknown"
	}
	p.mu.Lock()
	p.counts[op]++
	p.mu.Unlock()
}

// URL is the proxy's endpoint, to use instead of the target's.
func (p *Proxy) URL() string { return p.url }

// Counts returns the requests per operation so far.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Total returns the number of requests of the given operations, or of all
// operations when none is given.
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
	p.mu.Unlock()
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	if err := p.srv.Shutdown(context.Background()); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
