package countproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCountsOperations(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok:"+r.Header.Get("X-Amz-Target"))
	}))
	defer backend.Close()
	p, err := Start(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, op := range []string{"DynamoDB_20120810.PutItem", "DynamoDB_20120810.PutItem", "DynamoDB_20120810.GetItem"} {
		req, _ := http.NewRequest(http.MethodPost, p.URL(), strings.NewReader("{}"))
		req.Header.Set("X-Amz-Target", op)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok:"+op {
			t.Fatalf("proxied body %q", body)
		}
	}
	if c := p.Counts(); c["PutItem"] != 2 || c["GetItem"] != 1 {
		t.Fatalf("counts %v", c)
	}
	if p.Total() != 3 || p.Total("GetItem") != 1 {
		t.Fatalf("totals %d %d", p.Total(), p.Total("GetItem"))
	}
	p.Reset()
	if p.Total() != 0 {
		t.Fatal("reset kept counts")
	}
}
