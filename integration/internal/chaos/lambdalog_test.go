package chaos

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLambdaLog(t *testing.T) {
	var out bytes.Buffer
	l := &LambdaLog{Out: &out}
	lines := strings.Join([]string{
		`[consumer#0 pid=1] {"time":"2026-01-01T10:00:00.5Z","level":"INFO","msg":"record done","message_id":"m1","outcome":"executed","attempts":1,"storage_key":"consumer#a"}`,
		`[consumer#1 pid=2] {"time":"2026-01-01T10:00:00.25Z","level":"INFO","msg":"record done","message_id":"m1b","outcome":"executed","attempts":1,"storage_key":"consumer#a"}`,
		`[consumer#0 pid=1] {"time":"2026-01-01T10:00:00Z","level":"INFO","msg":"record done","message_id":"m2","outcome":"duplicate","attempts":1,"storage_key":"consumer#b"}`,
		`[consumer#1 pid=2] {"time":"2026-01-01T10:00:01Z","level":"ERROR","msg":"record done without receipt","message_id":"m3","outcome":"unconfirmed","attempts":1,"storage_key":"consumer#c","error":"idem: effect ran, receipt not written"}`,
		`[consumer#1 pid=2] {"time":"2026-01-01T10:00:06Z","level":"ERROR","msg":"record done without receipt","message_id":"m8","outcome":"unconfirmed","attempts":2,"storage_key":"consumer#h","rerun":true,"error":"idem: effect ran, receipt not written"}`,
		`[consumer-zombie#0 pid=3] {"time":"2026-01-01T10:00:02Z","level":"ERROR","msg":"record failed","message_id":"m4","outcome":"lease_lost","attempts":1,"storage_key":"consumer#d","error":"idem: lease lost"}`,
		`[consumer#2 pid=4] {"time":"2026-01-01T10:00:03Z","level":"ERROR","msg":"record failed","message_id":"m5","outcome":"failed","attempts":1,"storage_key":"consumer#e","error":"effect: write: operation error DynamoDB: UpdateItem, canceled, context deadline exceeded"}`,
		`[consumer#2 pid=4] {"time":"2026-01-01T10:00:03Z","level":"ERROR","msg":"record failed","message_id":"m6","outcome":"failed","attempts":1,"storage_key":"consumer#f","error":"consumer: injected fault: poison key fails every time"}`,
		`[consumer#3 pid=6] {"time":"2026-01-01T10:00:04Z","level":"ERROR","msg":"record failed","message_id":"m6","outcome":"store_error","attempts":0,"storage_key":"consumer#f","error":"idem: commit consumer#f: idem: store failed"}`,
		`[consumer#2 pid=4] {"time":"2026-01-01T10:00:02Z","level":"ERROR","msg":"record failed","message_id":"m6","outcome":"failed","attempts":1,"storage_key":"consumer#f","error":"logged late"}`,
		`[consumer#4 pid=7] {"time":"2026-01-01T10:00:05Z","level":"WARN","msg":"record done: the effect ran again after an unknown outcome","message_id":"m7","outcome":"rerun","attempts":2,"storage_key":"consumer#g"}`,
		`[consumer#2 pid=4] {"time":"2026-01-01T10:00:03Z","level":"INFO","msg":"batch done","records":6}`,
		`12:00:00.000 [consumer harness] consumer#2 request r timed out after 2s`,
		`[producer#0 pid=5] {"msg":"messages done","sent":10}`,
	}, "\n") + "\n"
	// Written in pieces that split lines, as pipes do.
	for i := 0; i < len(lines); i += 37 {
		if _, err := l.Write([]byte(lines[i:min(i+37, len(lines))])); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != lines {
		t.Fatal("Out did not get the log as written")
	}
	o := l.Outcomes()
	if o["executed"] != 2 || o["duplicate"] != 1 || o["unconfirmed"] != 2 || o["lease_lost"] != 1 || o["failed"] != 3 || o["store_error"] != 1 || o[Rerun] != 1 || len(o) != 7 {
		t.Fatalf("outcomes %v", o)
	}
	if at := l.Executed()["consumer#a"]; !at.Equal(time.Date(2026, 1, 1, 10, 0, 0, 250e6, time.UTC)) || len(l.Executed()) != 2 {
		t.Errorf("executed %v, want consumer#a first at 10:00:00.25, and consumer#g (its rerun)", l.Executed())
	}
	// A re-run whose receipt was not written is a re-run too.
	if r := l.Reruns(); len(r) != 2 || r[0].RecordKey != "consumer#h" || r[1].RecordKey != "consumer#g" || r[1].MessageID != "m7" || !r[1].At.Equal(time.Date(2026, 1, 1, 10, 0, 5, 0, time.UTC)) {
		t.Errorf("reruns %+v, want m8's (unconfirmed) and m7's", r)
	}
	f := l.Failures()
	if len(f) != 3 || f["m6"].Outcome != "store_error" || f["m5"].Outcome != "failed" || f["m4"].Outcome != "lease_lost" {
		t.Errorf("failures %v, want m4, m5 and m6's last, on the store", f)
	}
	w := l.Windows()
	if len(w) != 4 {
		t.Fatalf("windows %+v, want unconfirmed twice, lease lost, effect timeout", w)
	}
	if w[0].Outcome != "unconfirmed" || w[0].RecordKey != "consumer#c" || w[0].MessageID != "m3" || w[0].At.IsZero() || !strings.Contains(w[0].Error, "receipt not written") {
		t.Errorf("unconfirmed window %+v", w[0])
	}
	if w[1].Outcome != "unconfirmed" || w[2].Outcome != "lease_lost" || w[3].Outcome != EffectTimeout || w[3].RecordKey != "consumer#e" {
		t.Errorf("windows %+v", w[1:])
	}
}
