package assembly

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStacks(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"artifacts": {
		"App.assets": {"type": "cdk:asset-manifest"},
		"App": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "App.template.json"}},
		"Other": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "Other.template.json", "stackName": "Renamed"}}
	}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Stacks(dir)
	want := []Stack{{"App", filepath.Join(dir, "App.template.json")}, {"Renamed", filepath.Join(dir, "Other.template.json")}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Stacks = %v, %v; want %v", got, err, want)
	}
	if _, err := Only(dir); err == nil {
		t.Error("Only: no error for two stacks")
	}
	if _, err := Stacks(t.TempDir()); err == nil {
		t.Error("no error without a manifest")
	}
}
