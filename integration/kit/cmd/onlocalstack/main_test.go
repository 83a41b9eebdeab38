package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := parse(nil); err == nil || !strings.Contains(err.Error(), "cdk.json") {
		t.Errorf("without cdk.json: %v, want it named", err)
	}
	if err := os.WriteFile("cdk.json", []byte(`{"app":"go run ./infra"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"-c", "novalue"}, {"-secret", "=x"}, {"a", "b"}} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
	t.Setenv("SQSIDEM_CACHE", "rel")
	o, err := parse([]string{"-stub", "-c", "smsUrl={stub}", "./e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if o.pkg != "./e2e" || !o.stub || o.cache != filepath.Join(dir, "rel") || o.run != "^Test" || o.tags != "e2e" {
		t.Errorf("options %+v", o)
	}
}

func TestStacksOf(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"artifacts":{
		"Tree":{"type":"cdk:tree"},
		"Hotel":{"type":"aws:cloudformation:stack","properties":{"stackName":"Hotel"}},
		"AppB":{"type":"aws:cloudformation:stack","properties":{}}}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := stacksOf(dir)
	if err != nil || !slices.Equal(got, []string{"AppB", "Hotel"}) {
		t.Errorf("stacksOf = %v, %v; want [AppB Hotel]", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"artifacts":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := stacksOf(dir); err == nil {
		t.Error("an assembly without stacks accepted")
	}
}
