package kit

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRecord(t *testing.T) {
	t.Setenv(EnvRecord, filepath.Join(t.TempDir(), "e2e", "record.json"))
	s := Stack{Name: "HotelLocal", Resources: map[string]string{"http://q": "AWS::SQS::Queue"}}
	if err := remember(s); err != nil {
		t.Fatal(err)
	}
	r, err := recall("HotelLocal")
	if err != nil || r.StackName != "HotelLocal" || r.Resources["http://q"] != "AWS::SQS::Queue" {
		t.Fatalf("recall = %+v, %v", r, err)
	}
	if _, err := recall("Other"); err == nil || !strings.Contains(err.Error(), "not Other") {
		t.Errorf("another stack's record: %v, want an error", err)
	}
}
