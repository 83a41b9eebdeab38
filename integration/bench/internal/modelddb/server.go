// Package modelddb serves DynamoDB's JSON protocol from ddbmodel (the
// simulator's in-memory DynamoDB, checked against DynamoDB Local by its
// differential tests), with a modelled latency per request: the store of
// `make bench`'s cases with modelled latency.
//
// Those cases ask what a batch of 10 records costs next to one record when
// every request takes as long as DynamoDB takes. DynamoDB Local cannot
// answer that on this machine: it runs every request's SQL on one thread
// (sqlite4java's SQLiteQueue, behind a write lock: a thread dump under load
// shows the request threads BLOCKED in SQLiteJob.get), about 1 ms of CPU
// each on the cores the clients share, so ten requests in flight come back
// one after the other and the batch measures that queue. DynamoDB answers
// concurrent requests concurrently. Here a request costs the model tens of
// microseconds under one mutex, and the modelled latency is a timer that
// costs no CPU: what is left is the clients' own work.
package modelddb

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/integration/sim/ddbmodel"
)

// model is what the server asks of ddbmodel.Server.
type model interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Server is one in-memory DynamoDB on a 127.0.0.1 port.
type Server struct {
	db  *ddbmodel.Server
	srv *http.Server
	url string
	// wait is the modelled latency of one request, before it is applied;
	// it returns early when ctx ends.
	wait  func(ctx context.Context)
	delay atomic.Int64 // time.Duration, for the default wait

	mu     sync.Mutex
	counts map[string]int // per operation, every request received
	conns  int            // connections accepted
}

// Start listens on a free 127.0.0.1 port. Every request waits delay (a
// timer: no CPU) and is then answered by the model.
func Start(delay time.Duration) (*Server, error) {
	s := &Server{}
	s.delay.Store(int64(delay))
	return s, s.listen(s.sleep)
}

func (s *Server) listen(wait func(context.Context)) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("modelddb: listen: %w", err)
	}
	s.db, s.counts, s.wait = ddbmodel.New(), map[string]int{}, wait
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

func (s *Server) sleep(ctx context.Context) {
	d := time.Duration(s.delay.Load())
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// URL is the endpoint.
func (s *Server) URL() string { return s.url }

// SetDelay sets the modelled latency of the requests from now on.
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// CreateTable creates a table whose partition key is the string attribute
// pk (the orchestrator makes the tables: they are not requests of a run).
func (s *Server) CreateTable(name, pk string) error { return s.db.CreateTable(name, pk, "") }

// Counts returns the requests received per operation.
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// Conns returns the connections accepted: a client whose pool is too
// small for its concurrency opens new ones as it goes.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Reset sets every count to zero.
func (s *Server) Reset() {
	s.mu.Lock()
	clear(s.counts)
	s.conns = 0
	s.mu.Unlock()
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	s.mu.Lock()
	s.counts[op]++
	s.mu.Unlock()
	s.wait(r.Context())
	if r.Context().Err() != nil {
		return
	}
	status, resp := http.StatusOK, any(nil)
	req, err := decodeRequest(body)
	if err == nil {
		resp, err = call(r.Context(), s.db, op, req)
	}
	if err != nil {
		status, resp = errorBody(err)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		status, out = http.StatusInternalServerError, fmt.Appendf(nil, `{"__type":"%sInternalServerError","message":%q}`, typePrefix, err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10))
	h.Set("X-Amzn-RequestId", "modelddb")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
