package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Tier is one step of `make test` as integration/scripts/tier.sh recorded
// it: NAME.status beside NAME.log.
type Tier struct {
	Name   string
	Parent string // the tier it ran inside, "" for none
	Log    string
	// Start and End are Unix times in seconds; End is 0 for a tier that
	// never ended (killed, interrupted).
	Start, End float64
	RC         int
	Failures   []Failure // only for a tier that failed
	Children   []*Tier
}

// Done reports whether the tier ended.
func (t *Tier) Done() bool { return t.End > 0 }

// Failed reports whether the tier failed or never ended.
func (t *Tier) Failed() bool { return !t.Done() || t.RC != 0 }

// ReadTiers reads the status files of dir and the logs of the tiers that
// failed, and returns the tiers that ran inside no other, in the order they
// started, each with the tiers that ran inside it.
func ReadTiers(dir string) ([]*Tier, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.status"))
	if err != nil {
		return nil, err
	}
	byName := map[string]*Tier{}
	var all []*Tier
	for _, p := range paths {
		t, err := readStatus(p)
		if err != nil {
			return nil, err
		}
		if t.Failed() {
			if t.Failures, err = parseLog(t.Log); err != nil {
				return nil, err
			}
		}
		byName[t.Name] = t
		all = append(all, t)
	}
	byStart := func(a, b *Tier) int {
		if c := compareFloat(a.Start, b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}
	slices.SortFunc(all, byStart)
	var roots []*Tier
	for _, t := range all {
		if p := byName[t.Parent]; p != nil && p != t {
			p.Children = append(p.Children, t)
		} else {
			roots = append(roots, t)
		}
	}
	for _, t := range roots {
		dropInner(t)
	}
	return roots, nil
}

// dropInner leaves out of t the failures that a tier inside it reports
// too: its log repeats theirs.
func dropInner(t *Tier) map[string]bool {
	inner := map[string]bool{}
	for _, c := range t.Children {
		for k := range dropInner(c) {
			inner[k] = true
		}
	}
	var own []Failure
	for _, f := range t.Failures {
		if !inner[f.key()] {
			own = append(own, f)
		}
	}
	t.Failures = own
	for _, f := range own {
		inner[f.key()] = true
	}
	return inner
}

func readStatus(path string) (*Tier, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".status")
	t := &Tier{Name: name, Log: strings.TrimSuffix(path, ".status") + ".log"}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "start":
			t.Start, err = strconv.ParseFloat(v, 64)
		case "end":
			t.End, err = strconv.ParseFloat(v, 64)
		case "rc":
			t.RC, err = strconv.Atoi(v)
		case "parent":
			t.Parent = v
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, k, err)
		}
	}
	return t, sc.Err()
}

func parseLog(path string) ([]Failure, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f), nil
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
