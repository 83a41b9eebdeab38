package main

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	a, err := parse([]string{"batch-new", "--endpoint", "http://x", "--table", "t", "-r", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if a.workers != 10 || a.events != 3 || a.processor != "concurrent" || a.validation != "on" || a.keyPrefix == "" {
		t.Errorf("defaults: %+v", a)
	}
	a, err = parse([]string{"lease-dup", "--endpoint", "http://x", "--table", "t", "--messages", "7", "-w", "16"})
	if err != nil || a.workers != 16 || a.messages != 7 {
		t.Errorf("lease-dup: %+v %v", a, err)
	}
	for _, argv := range [][]string{
		{},
		{"--endpoint", "http://x", "lease-new"},
		{"nope", "--endpoint", "http://x", "--table", "t"},
		{"lease-new", "--table", "t"},
		{"batch-new", "--endpoint", "http://x", "--table", "t", "--processor", "sequential", "-w", "4"},
		{"lease-new", "--endpoint", "http://x", "--table", "t", "-n", "0"},
		{"lease-new", "--endpoint", "http://x", "--table", "t", "--validation", "maybe"},
	} {
		var u usageError
		if _, err := parse(argv); !errors.As(err, &u) {
			t.Errorf("parse(%q) = %v, want a usage error", argv, err)
		}
	}
}

func TestCheckEffects(t *testing.T) {
	keys := []string{"a", "b"}
	if got := checkEffects(true, keys, map[string]int{"a": 1, "b": 1}, 0, nil); got != "" {
		t.Errorf("all once: %q", got)
	}
	if got := checkEffects(true, keys, map[string]int{"a": 2, "b": 1}, 0, nil); got == "" {
		t.Error("a double effect passed")
	}
	if got := checkEffects(false, keys, map[string]int{"a": 1}, 0, nil); got == "" {
		t.Error("an effect on a duplicate passed")
	}
	if got := checkEffects(false, keys, nil, 1, errors.New("x")); got == "" {
		t.Error("a failed call passed")
	}
}
