// Package docs_test keeps the README and the pages of docs/ true to the
// code: every Go snippet of the README is code that a test compiles (and,
// for most, runs), every relative link leads to a file and heading that
// exist, and the README stays a README.
//
// A ```go block of README.md must follow a comment naming the file that
// holds it:
//
//	<!-- snippet: pkg/idem/consumer/example_test.go -->
//	```go
//	…
//	```
//
// and its lines, blank ones left out and indentation ignored, must appear
// in that file one after the other, verbatim. Edit the example first (a
// test compiles and runs it), then copy it into the README. A ```go block
// of a page of docs/ is checked the same way when it has such a comment.
//
// Run: go test ./docs/ (part of go test ./... at the top, and of make unit).
package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = ".."

// maxReadmeLines: the README is for users; the rest is in docs/.
const maxReadmeLines = 300

var snippetComment = regexp.MustCompile(`^<!--\s*snippet:\s*(\S+)\s*-->$`)

// block is a fenced code block of a markdown file.
type block struct {
	line    int    // of its opening fence, 1-based
	lang    string // the fence's info string's first word
	snippet string // the file its snippet comment names, "" without one
	lines   []string
}

// TestReadmeSnippets: every Go snippet of the README is in the example
// file it names.
func TestReadmeSnippets(t *testing.T) {
	n := 0
	for _, b := range blocks(t, "README.md") {
		if b.lang != "go" {
			continue
		}
		n++
		if b.snippet == "" {
			t.Errorf("README.md:%d: a ```go block without <!-- snippet: FILE --> above it: put the code in an example file a test compiles and name that file", b.line)
			continue
		}
		checkSnippet(t, "README.md", b)
	}
	if n == 0 {
		t.Error("README.md has no ```go block: the parser no longer finds them?")
	}
}

// TestDocsSnippets: a Go snippet of a page of docs/ that names its file is
// in that file.
func TestDocsSnippets(t *testing.T) {
	for _, page := range pages(t) {
		for _, b := range blocks(t, page) {
			if b.lang == "go" && b.snippet != "" {
				checkSnippet(t, page, b)
			}
		}
	}
}

func checkSnippet(t *testing.T, doc string, b block) {
	t.Helper()
	src := filepath.Clean(filepath.FromSlash(b.snippet))
	if filepath.IsAbs(src) || strings.HasPrefix(src, "..") || !strings.HasSuffix(src, "_test.go") {
		t.Errorf("%s:%d: snippet file %q: want a _test.go file of this repository, by its path from the top", doc, b.line, b.snippet)
		return
	}
	data, err := os.ReadFile(filepath.Join(root, src))
	if err != nil {
		t.Errorf("%s:%d: snippet file: %v", doc, b.line, err)
		return
	}
	want, have := normalize(b.lines), normalize(strings.Split(string(data), "\n"))
	if len(want) == 0 {
		t.Errorf("%s:%d: an empty snippet", doc, b.line)
		return
	}
	// The longest run of the snippet's lines found in the file, to say
	// where the two part.
	best, at := 0, -1
	for i := range have {
		k := 0
		for k < len(want) && i+k < len(have) && have[i+k].text == want[k].text {
			k++
		}
		if k == len(want) {
			return
		}
		if k > best {
			best, at = k, i
		}
	}
	w := want[best]
	switch {
	case at < 0:
		t.Errorf("%s:%d: the snippet's line %q is nowhere in %s: edit the example first (a test compiles it), then copy it into %s",
			doc, b.line+w.n, w.text, b.snippet, doc)
	case at+best < len(have):
		h := have[at+best]
		t.Errorf("%s:%d: the snippet follows %s:%d for %d line(s), then has %q where the file has %q: edit the example first (a test compiles it), then copy it into %s",
			doc, b.line+w.n, b.snippet, have[at].n, best, w.text, h.text, doc)
	default:
		t.Errorf("%s:%d: the snippet follows %s:%d to the file's end, then has %q: edit the example first, then copy it into %s",
			doc, b.line+w.n, b.snippet, have[at].n, w.text, doc)
	}
}

// line is a line without its indentation, and where it was (1-based).
type line struct {
	text string
	n    int
}

// normalize drops blank lines and every line's leading and trailing white
// space: a snippet is compared line by line, whatever its indentation.
func normalize(lines []string) []line {
	var out []line
	for i, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, line{l, i + 1})
		}
	}
	return out
}

// blocks are the fenced code blocks of the markdown file doc (a path from
// the top), each with the snippet comment on the last non-blank line
// before it, if any.
func blocks(t *testing.T, doc string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	var (
		out  []block
		cur  *block
		prev string // the last non-blank line outside a block
	)
	for i, l := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{line: i + 1}
			if f := strings.Fields(strings.TrimLeft(trimmed, "`")); len(f) > 0 {
				cur.lang = f[0]
			}
			if m := snippetComment.FindStringSubmatch(prev); m != nil {
				cur.snippet = m[1]
			}
		case cur != nil && strings.Trim(trimmed, "`") == "" && strings.HasPrefix(trimmed, "```"):
			out = append(out, *cur)
			cur, prev = nil, ""
		case cur != nil:
			// The snippet's lines: the block's own line numbers are
			// relative to its fence.
			cur.lines = append(cur.lines, l)
		case trimmed != "":
			prev = trimmed
		}
	}
	if cur != nil {
		t.Errorf("%s:%d: a code block that never ends", doc, cur.line)
	}
	return out
}

// pages are the markdown pages of docs/, by their path from the top.
func pages(t *testing.T) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range found {
		out = append(out, "docs/"+filepath.Base(f))
	}
	if len(out) == 0 {
		t.Fatal("no pages in docs/")
	}
	return out
}

// TestReadmeLength: the README says what the project is, how to use it,
// what it guarantees and where to read on, in at most maxReadmeLines
// lines; evidence, timings and reference go to docs/.
func TestReadmeLength(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the details to a page of docs/ and link it", n, maxReadmeLines)
	}
}

// TestEveryPageLinked: the README's "Where to go next" leads to every page
// of docs/.
func TestEveryPageLinked(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range links(t, "README.md") {
		linked[l.path] = true
	}
	for _, page := range pages(t) {
		if !linked[page] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

// TestLinks: every relative link of the README and of the pages of docs/
// leads to a file of the repository, and an anchor to a heading of it.
func TestLinks(t *testing.T) {
	anchors := map[string][]string{} // markdown file -> its headings' anchors
	for _, doc := range append([]string{"README.md"}, pages(t)...) {
		for _, l := range links(t, doc) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(l.path))); err != nil {
				t.Errorf("%s:%d: link %q: %v", doc, l.line, l.target, err)
				continue
			}
			if l.anchor == "" || !strings.HasSuffix(l.path, ".md") {
				continue
			}
			if _, ok := anchors[l.path]; !ok {
				anchors[l.path] = headingAnchors(t, l.path)
			}
			if !slices.Contains(anchors[l.path], l.anchor) {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", doc, l.line, l.target, l.path, l.anchor)
			}
		}
	}
}

// link is a relative link of a markdown file.
type link struct {
	line   int
	target string // as written
	path   string // the file it leads to, from the top
	anchor string
}

var (
	linkPattern = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	inlineCode  = regexp.MustCompile("`[^`]*`")
	scheme      = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links are the relative links of doc outside code, resolved from doc's
// directory.
func links(t *testing.T, doc string) []link {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	var out []link
	inBlock := false
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = doc
			} else {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(filepath.FromSlash(doc)), filepath.FromSlash(path))))
			}
			out = append(out, link{line: i + 1, target: target, path: path, anchor: anchor})
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives the headings of doc: lower
// case, punctuation dropped, spaces as hyphens, "-1", "-2"… for repeats.
func headingAnchors(t *testing.T, doc string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]int{}
	inBlock := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}
