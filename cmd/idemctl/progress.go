package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress is the scan's progress line on stderr. It exists only when
// stderr is a terminal: a pipe or a file gets nothing, so that logs and
// scripts see only the result. A nil *progress does nothing.
type progress struct {
	w     io.Writer
	label string
	// total is DynamoDB's approximate item count: a hint, refreshed every
	// few hours, so the bar says "~" and never passes 99% on its own.
	total int64

	mu               sync.Mutex
	scanned, matched int64
	segments, done   int
	last             time.Time
	drawn            bool
	every            time.Duration
	now              func() time.Time
}

// newProgress returns a bar writing to w when tty, else nil.
func newProgress(w io.Writer, tty bool, label string, total int64, now func() time.Time) *progress {
	if !tty {
		return nil
	}
	return &progress{w: w, label: label, total: total, every: 100 * time.Millisecond, now: now}
}

func (p *progress) start(segments int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.segments = segments
	p.draw(true)
}

func (p *progress) add(scanned, matched int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scanned += scanned
	p.matched += matched
	p.draw(false)
}

func (p *progress) segmentDone() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.draw(false)
}

// finish erases the line, so that the result starts on a clean one.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// draw redraws at most every p.every, unless forced.
func (p *progress) draw(force bool) {
	now := p.now()
	if !force && now.Sub(p.last) < p.every {
		return
	}
	p.last, p.drawn = now, true
	const width = 24
	var bar, of string
	if p.total > 0 {
		frac := min(float64(p.scanned)/float64(p.total), 0.99)
		n := int(frac * width)
		bar = "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "] "
		of = fmt.Sprintf(" of ~%d", p.total)
	}
	fmt.Fprintf(p.w, "\r\033[K%s%s: %d%s items read, %d matched, %d/%d segments done", bar, p.label, p.scanned, of, p.matched, p.done, p.segments)
}
