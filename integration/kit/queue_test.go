package kit

import (
	"testing"
	"time"
)

func TestParseRedrive(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string]string
		want  redrive
		bad   bool
	}{
		{name: "AWS: a number", attrs: map[string]string{"VisibilityTimeout": "24", "RedrivePolicy": `{"deadLetterTargetArn":"arn","maxReceiveCount":3}`},
			want: redrive{visibility: 24 * time.Second, maxReceives: 3}},
		{name: "a string", attrs: map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": `{"deadLetterTargetArn":"arn","maxReceiveCount":"5"}`},
			want: redrive{visibility: 30 * time.Second, maxReceives: 5}},
		{name: "no redrive", attrs: map[string]string{"VisibilityTimeout": "30"}, bad: true},
		{name: "zero receives", attrs: map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": `{"maxReceiveCount":0}`}, bad: true},
		{name: "no visibility", attrs: map[string]string{"RedrivePolicy": `{"maxReceiveCount":3}`}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRedrive(tc.attrs)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("parseRedrive = %+v, %v; want %+v (error: %t)", got, err, tc.want, tc.bad)
			}
		})
	}
	if b := (redrive{visibility: 24 * time.Second, maxReceives: 3}).bound(); b != 96*time.Second {
		t.Errorf("bound %s, want 4 visibility timeouts", b)
	}
}
