package chaos

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// Panel is one mode's timeline in the chart.
type Panel struct {
	Title   string
	Start   time.Time // time zero: the run's first send
	Samples []Sample
	Events  []Event
}

// Chart geometry, in SVG user units (pixels).
const (
	chartWidth  = 1000
	marginLeft  = 80
	marginRight = 30
	plotWidth   = chartWidth - marginLeft - marginRight
	headerH     = 66 // panel title and legend (two lines)
	rowGap      = 14
	stripH      = 34 // the kill/freeze strip
	axisH       = 36 // time axis labels
)

// Series colours.
const (
	colThroughput = "#1f77b4"
	colInFlight   = "#ff7f0e"
	colQueued     = "#7f7f7f"
	colDLQ        = "#d62728"
	colKill       = "#d62728"
	colFreeze     = "#1f9e89"
	colTimeout    = "#9467bd"
)

type row struct {
	label  string
	height float64
	series []series
}

type series struct {
	name   string
	colour string
	points []point
}

type point struct{ t, v float64 }

// WriteChart draws the panels one under the other as an SVG document:
// per panel, throughput, the queue (in flight, waiting) and the DLQ depth
// over a shared time axis, and a strip with every kill, freeze and
// timeout.
func WriteChart(w io.Writer, title string, panels []Panel) error {
	bw := bufio.NewWriter(w)
	rowsOf := func(p Panel) []row {
		var thr, inflight, queued, dlq []point
		for i, s := range p.Samples {
			t := s.T.Seconds()
			thr = append(thr, point{t, Rate(p.Samples[:i+1], 3*time.Second)})
			inflight = append(inflight, point{t, float64(s.InFlight)})
			queued = append(queued, point{t, float64(s.Visible)})
			dlq = append(dlq, point{t, float64(s.DLQ)})
		}
		return []row{
			{"deliveries / s", 170, []series{{"throughput (deliveries/s, 3 s window)", colThroughput, thr}}},
			{"messages", 150, []series{{"in flight (received, not deleted)", colInFlight, inflight}, {"waiting in the queue", colQueued, queued}}},
			{"DLQ depth", 100, []series{{"dead-letter queue", colDLQ, dlq}}},
		}
	}
	tmax := 1.0
	for _, p := range panels {
		if n := len(p.Samples); n > 0 {
			tmax = max(tmax, p.Samples[n-1].T.Seconds())
		}
	}
	panelH := func(rows []row) float64 {
		h := float64(headerH + stripH + axisH)
		for _, r := range rows {
			h += r.height + rowGap
		}
		return h
	}
	total := 40.0
	for _, p := range panels {
		total += panelH(rowsOf(p)) + 20
	}
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="26" font-size="17" font-weight="bold">%s</text>
`, chartWidth, total, chartWidth, total, marginLeft, esc(title))
	x := func(t float64) float64 { return marginLeft + t/tmax*plotWidth }
	y0 := 40.0
	for _, p := range panels {
		rows := rowsOf(p)
		fmt.Fprintf(bw, `<g class="panel"><text x="%d" y="%.1f" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, y0+18, esc(p.Title))
		legend(bw, y0+36, rows)
		y := y0 + headerH
		for _, r := range rows {
			plot(bw, r, y, x, tmax)
			y += r.height + rowGap
		}
		strip(bw, p, y, x, tmax)
		y += stripH
		timeAxis(bw, y, x, tmax)
		fmt.Fprintln(bw, "</g>")
		y0 += panelH(rows) + 20
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// legend lists the series and event marks, wrapping to a second line
// when the first is full.
func legend(w io.Writer, y float64, rows []row) {
	x := float64(marginLeft)
	item := func(colour, name string, mark bool) {
		width := 26 + 6.4*float64(len(name))
		if x+width > marginLeft+plotWidth {
			x, y = marginLeft, y+16
		}
		if mark {
			fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`, x+7, y-11, x+7, y+2, colour)
		} else {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="14" height="4" fill="%s"/>`, x, y-6, colour)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+18, y, esc(name))
		x += width
	}
	for _, r := range rows {
		for _, s := range r.series {
			item(s.colour, s.name, false)
		}
	}
	item(colKill, "SIGKILL", true)
	item(colFreeze, "SIGSTOP zombie", true)
	item(colTimeout, "killed at the timeout / crash", true)
}

func plot(w io.Writer, r row, top float64, x func(float64) float64, tmax float64) {
	vmax := 1.0
	for _, s := range r.series {
		for _, p := range s.points {
			vmax = max(vmax, p.v)
		}
	}
	step := max(niceStep(vmax, 4), 1) // counts: whole numbers
	vmax = math.Ceil(vmax/step) * step
	y := func(v float64) float64 { return top + r.height - v/vmax*r.height }
	fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="none" stroke="#333"/>`+"\n", marginLeft, top, plotWidth, r.height)
	for v := 0.0; v <= vmax+step/2; v += step {
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			marginLeft, y(v), marginLeft+plotWidth, y(v), marginLeft-6, y(v)+4, number(v))
	}
	for t := 0.0; t <= tmax; t += timeStep(tmax) {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f0f0f0"/>`+"\n", x(t), top, x(t), top+r.height)
	}
	fmt.Fprintf(w, `<text transform="translate(%d %.1f) rotate(-90)" text-anchor="middle" font-weight="bold">%s</text>`+"\n",
		16, top+r.height/2, esc(r.label))
	for _, s := range r.series {
		if len(s.points) == 0 {
			continue
		}
		var b strings.Builder
		for i, p := range s.points {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(p.t), y(p.v))
		}
		fmt.Fprintf(w, `<polyline class="series" data-name="%s" fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", esc(s.name), s.colour, b.String())
	}
}

// strip marks each kill, freeze and timeout at its moment.
func strip(w io.Writer, p Panel, top float64, x func(float64) float64, tmax float64) {
	fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%d" height="%d" fill="#fafafa" stroke="#333"/>`+"\n", marginLeft, top, plotWidth, stripH-8)
	fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">faults</text>`+"\n", marginLeft-6, top+16)
	lanes := map[string]float64{EventKill: 0, EventFreeze: 1, EventTimeout: 2, EventCrash: 2}
	colours := map[string]string{EventKill: colKill, EventFreeze: colFreeze, EventTimeout: colTimeout, EventCrash: colTimeout}
	laneH := float64(stripH-8) / 3
	for _, e := range p.Events {
		t := e.At.Sub(p.Start).Seconds()
		if t < 0 || t > tmax || e.Kind == EventProcess {
			continue // an invocation killed with its process: the kill marks the moment
		}
		y1 := top + lanes[e.Kind]*laneH + 1
		fmt.Fprintf(w, `<line class="event" data-kind="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.4"><title>%s</title></line>`+"\n",
			e.Kind, x(t), y1, x(t), y1+laneH-2, colours[e.Kind], esc(e.Kind+" "+e.Point+" "+e.Key+" "+e.Pool))
	}
}

func timeAxis(w io.Writer, top float64, x func(float64) float64, tmax float64) {
	step := timeStep(tmax)
	for t := 0.0; t <= tmax+step/100; t += step {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x(t), top-8, x(t), top-3, x(t), top+10, clock(t))
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">time since the first send (m:ss)</text>`+"\n", float64(marginLeft+plotWidth/2), top+26)
}

// niceStep is a round step (1, 2 or 5 × 10^k) that cuts span into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// timeStep is a step of the time axis, in seconds, that a clock reads
// well: about ten ticks.
func timeStep(span float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1800, 3600} {
		if span/s <= 12 {
			return s
		}
	}
	return 3600
}

func number(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.0fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

func clock(sec float64) string {
	s := int(math.Round(sec))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func esc(s string) string { return html.EscapeString(s) }
