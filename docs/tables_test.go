package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// generator writes the blocks of figures that runs print into the pages
// (make docs-tables), each between <!-- NAME: begin --> and
// <!-- NAME: end -->; its line "blocks=(NAME:PAGE ...)" names them all.
const generator = "integration/scripts/doc-tables.sh"

var (
	blocksLine = regexp.MustCompile(`(?m)^blocks=\(([^)]*)\)`)
	marker     = regexp.MustCompile(`^<!--\s*(\S+):\s*(begin|end)\s*-->$`)
	// A block's first line says which run, when: a date, and the
	// command that wrote it.
	dated = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
)

// generatedBlocks are the generator's blocks: name -> page.
func generatedBlocks(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, generator))
	if err != nil {
		t.Fatal(err)
	}
	m := blocksLine.FindSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no line blocks=(NAME:PAGE ...): this test reads the blocks from it", generator)
	}
	out := map[string]string{}
	for _, f := range strings.Fields(string(m[1])) {
		name, page, ok := strings.Cut(f, ":")
		if !ok || name == "" || page == "" {
			t.Fatalf("%s: block %q: want NAME:PAGE", generator, f)
		}
		out[name] = page
	}
	if len(out) == 0 {
		t.Fatalf("%s: blocks=() names no block", generator)
	}
	return out
}

// markerLine is a marker found in a page, outside code blocks.
type markerLine struct {
	name, kind string // kind: begin or end
	line       int    // 1-based
}

// markers are the marker lines of doc, and the lines of doc. A marker
// inside a fenced code block is reported: the generator would cut the
// block in two.
func markers(t *testing.T, doc string) ([]markerLine, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []markerLine
	inBlock := false
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			continue
		}
		m := marker.FindStringSubmatch(trimmed)
		if m == nil {
			continue
		}
		if inBlock {
			t.Errorf("%s:%d: marker %q inside a code block", doc, i+1, trimmed)
			continue
		}
		if l != trimmed {
			t.Errorf("%s:%d: marker %q: the generator matches the whole line: no spaces around it", doc, i+1, l)
		}
		out = append(out, markerLine{m[1], m[2], i + 1})
	}
	return out, lines
}

// TestTableMarkers: every block the generator writes has, in its page,
// one begin and one end marker in that order, outside code, and between
// them a dated block that names its command; and no page holds a marker
// the generator does not know (a block renamed on one side only).
func TestTableMarkers(t *testing.T) {
	want := generatedBlocks(t)
	found := map[string]bool{}
	for _, doc := range append([]string{"README.md"}, pages(t)...) {
		ms, lines := markers(t, doc)
		byName := map[string][]markerLine{}
		for _, m := range ms {
			byName[m.name] = append(byName[m.name], m)
		}
		for name, got := range byName {
			page, known := want[name]
			switch {
			case !known:
				t.Errorf("%s:%d: marker of a block %s does not write (%s's blocks=(…) lacks %s:%s)", doc, got[0].line, generator, generator, name, doc)
				continue
			case page != doc:
				t.Errorf("%s:%d: block %s: %s writes it into %s, not here", doc, got[0].line, name, generator, page)
				continue
			}
			found[name] = true
			if len(got) != 2 || got[0].kind != "begin" || got[1].kind != "end" {
				var seq []string
				for _, m := range got {
					seq = append(seq, m.kind)
				}
				t.Errorf("%s:%d: block %s has markers %v, want [begin end]", doc, got[0].line, name, seq)
				continue
			}
			checkBlock(t, doc, name, got[0].line, lines[got[0].line:got[1].line-1])
		}
	}
	for name, page := range want {
		if !found[name] {
			t.Errorf("%s: no markers <!-- %s: begin --> / <!-- %s: end --> (%s writes block %s there)", page, name, name, generator, name)
		}
	}
}

// checkBlock checks what lies between a block's markers (its begin at
// line begin): a first line with a date and the command that wrote it,
// and code fences that close.
func checkBlock(t *testing.T, doc, name string, begin int, body []string) {
	t.Helper()
	first := ""
	fences := 0
	for _, l := range body {
		if first == "" && strings.TrimSpace(l) != "" {
			first = l
		}
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fences++
		}
	}
	switch {
	case first == "":
		t.Errorf("%s:%d: block %s is empty: run %s %s", doc, begin, name, generator, name)
	case !dated.MatchString(first) || !strings.Contains(first, "doc-tables.sh "+name):
		t.Errorf("%s:%d: block %s begins %q: want the run's date and the command that wrote it (%s %s)", doc, begin+1, name, first, generator, name)
	}
	if fences%2 != 0 {
		t.Errorf("%s:%d: block %s opens a code block it does not close", doc, begin, name)
	}
}
