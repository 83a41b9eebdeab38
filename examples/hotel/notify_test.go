package hotel_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"

	"example.com/hotel"
)

const confirmed = `{"bookingId":"b-1","room":"101","guest":"Ada","checkIn":"2026-12-24","nights":3}`

// agency is a webhook that answers status and records what it was posted.
type agency struct {
	mu     sync.Mutex
	status int
	posts  []post
}

// post is a call the agency received.
type post struct {
	key  string // its Idempotency-Key
	body hotel.Confirmed
}

func (a *agency) received() []post {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]post(nil), a.posts...)
}

func (a *agency) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var c hotel.Confirmed
	_ = json.NewDecoder(r.Body).Decode(&c)
	a.mu.Lock()
	a.posts = append(a.posts, post{key: r.Header.Get("Idempotency-Key"), body: c})
	status := a.status
	a.mu.Unlock()
	if status == 0 { // the reply lost: the connection dropped
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
		return
	}
	w.WriteHeader(status)
}

// TestNotify: the webhook is posted the confirmation with the booking id
// as Idempotency-Key; a refusal, or a call that never left, is definite;
// a 409, a 5xx or a lost reply is an unknown outcome; a malformed booking
// is refused without a call.
func TestNotify(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int // 0: the reply is lost
		down     bool
		body     string
		definite bool
		ok       bool
		posts    int
	}{
		{name: "accepted", status: http.StatusAccepted, body: confirmed, ok: true, posts: 1},
		{name: "refused", status: http.StatusUnprocessableEntity, body: confirmed, definite: true, posts: 1},
		{name: "rate-limited", status: http.StatusTooManyRequests, body: confirmed, definite: true, posts: 1},
		{name: "still working on the key", status: http.StatusConflict, body: confirmed, posts: 1},
		{name: "unavailable", status: http.StatusServiceUnavailable, body: confirmed, posts: 1},
		{name: "the reply lost", status: 0, body: confirmed, posts: 1},
		{name: "the endpoint down: the dial failed", down: true, body: confirmed, definite: true},
		{name: "malformed", body: `{"bookingId":"b-1"}`, definite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &agency{status: tc.status}
			srv := httptest.NewServer(a)
			if tc.down {
				srv.Close()
			} else {
				defer srv.Close()
			}
			hook := hotel.Webhook{URL: srv.URL + "/hooks/bookings", Client: &http.Client{}}
			_, err := hook.Notify(context.Background(), "b-1", events.SQSMessage{Body: tc.body})
			if (err == nil) != tc.ok || idem.IsDefinite(err) != tc.definite {
				t.Errorf("err %v (definite %t), want ok %t, definite %t", err, idem.IsDefinite(err), tc.ok, tc.definite)
			}
			posts := a.received()
			if len(posts) != tc.posts {
				t.Fatalf("%d posts, want %d", len(posts), tc.posts)
			}
			if want := (post{key: "b-1", body: hotel.Confirmed{BookingID: "b-1", Room: "101", CheckIn: "2026-12-24", Nights: 3}}); tc.posts > 0 && posts[0] != want {
				t.Errorf("posted %+v, want %+v", posts[0], want)
			}
		})
	}
}

// TestNotifyOnce: through the consumer runtime, as the stack configures
// it (lease mode, retry, no reconcile), copies of a booking in one batch
// and in a later one post once.
func TestNotifyOnce(t *testing.T) {
	a := &agency{status: http.StatusOK}
	srv := httptest.NewServer(a)
	defer srv.Close()
	cfg, err := consumer.Load(func(name string) string {
		return map[string]string{consumer.EnvTable: "receipts", consumer.EnvMode: consumer.ModeLease,
			consumer.EnvUnknownOutcome: consumer.UnknownRetry, consumer.EnvKey: hotel.KeyField, consumer.EnvNamespace: hotel.NotificationsNamespace}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	hook := hotel.Webhook{URL: srv.URL, Client: srv.Client()}
	h, err := consumer.New(cfg, idemtest.NewMemoryStore(), consumer.Effect{Lease: hook.Notify},
		consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]string{{"m1", "m2"}, {"m3"}} {
		var ev events.SQSEvent
		for _, id := range batch {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Body: confirmed})
		}
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch %v: %+v, %v", batch, resp, err)
		}
	}
	if n := len(a.received()); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
}
