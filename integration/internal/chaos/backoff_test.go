package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestQueueVisibility(t *testing.T) {
	for name, tt := range map[string]struct {
		queue string
		want  time.Duration
	}{
		"set":     {`{"VisibilityTimeout": 12, "RedrivePolicy": {"maxReceiveCount": 3}}`, 12 * time.Second},
		"string":  {`{"VisibilityTimeout": "180"}`, 3 * time.Minute},
		"default": {`{}`, 30 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "template.json")
			tpl := `{"Resources": {
				"Dlq": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 99}},
				"Orders": {"Type": "AWS::SQS::Queue", "Properties": ` + tt.queue + `},
				"Mapping": {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {"EventSourceArn": {"Fn::GetAtt": ["Orders", "Arn"]}}}
			}}`
			if err := os.WriteFile(path, []byte(tpl), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := queueVisibility(path); err != nil || got != tt.want {
				t.Fatalf("queueVisibility = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
