package kit

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestBatches(t *testing.T) {
	var msgs []labelled
	for _, l := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		msgs = append(msgs, labelled{label: l, msg: Message{Body: "body " + l, Attributes: map[string]string{"bookingId": l}}})
	}
	bs, err := batches("run1", msgs, 3)
	if err != nil {
		t.Fatal(err)
	}
	// 10/3 = 3 messages a batch, their copies side by side.
	if len(bs) != 3 || len(bs[0]) != 9 || len(bs[2]) != 3 {
		t.Fatalf("%d batches (%d, ..., %d entries), want 3 of 9, 9 and 3", len(bs), len(bs[0]), len(bs[len(bs)-1]))
	}
	for _, b := range bs {
		ids := map[string]bool{}
		for i, e := range b {
			if ids[aws.ToString(e.Id)] {
				t.Errorf("entry id %s twice in a batch", aws.ToString(e.Id))
			}
			ids[aws.ToString(e.Id)] = true
			first := b[i-i%3]
			if aws.ToString(e.MessageBody) != aws.ToString(first.MessageBody) {
				t.Errorf("entry %d: body %q, want its copies' %q", i, aws.ToString(e.MessageBody), aws.ToString(first.MessageBody))
			}
			run, label, ok := runLabel(e.MessageAttributes)
			if !ok || run != "run1" || "body "+label != aws.ToString(e.MessageBody) {
				t.Errorf("entry %d: run %q, label %q (%t), want run1 and its message's label", i, run, label, ok)
			}
			if v := aws.ToString(e.MessageAttributes["bookingId"].StringValue); v != label {
				t.Errorf("entry %d: attribute bookingId %q, want %q", i, v, label)
			}
		}
	}
}

func TestBatchesRefuse(t *testing.T) {
	if _, err := batches("r", []labelled{{label: "a"}}, 11); err == nil {
		t.Error("11 copies: no error, want one (a batch takes 10)")
	}
	own := []labelled{{label: "a", msg: Message{Body: "x", Attributes: map[string]string{AttributeRun: "mine"}}}}
	if _, err := batches("r", own, 1); err == nil {
		t.Errorf("a message setting %s: no error, want one", AttributeRun)
	}
}

func TestJSON(t *testing.T) {
	if m := JSON(map[string]int{"nights": 2}); m.Body != `{"nights":2}` || m.Attributes != nil {
		t.Errorf("JSON = %+v", m)
	}
}
