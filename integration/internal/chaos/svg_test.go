package chaos

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

func TestWriteChartIsValidSVGWithEverySeries(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var samples []Sample
	for i := range 120 {
		samples = append(samples, Sample{T: time.Duration(i) * time.Second, Deliveries: int64(i * 250), Visible: 100 + i, InFlight: 200 - i, DLQ: i / 10})
	}
	events := []Event{
		{At: start.Add(10 * time.Second), Kind: EventKill, Point: PointAfterEffect, Key: "o-1", Pool: "consumer"},
		{At: start.Add(20 * time.Second), Kind: EventFreeze, Point: PointAfterEffect, Key: "o-<2>&", Pool: "consumer-zombie"},
		{At: start.Add(30 * time.Second), Kind: EventTimeout, Pool: "consumer"},
	}
	panels := []Panel{
		{Title: "lease mode", Start: start, Samples: samples, Events: events},
		{Title: "transactional mode & <more>", Start: start, Samples: samples[:60]},
	}
	var b bytes.Buffer
	if err := WriteChart(&b, "Chaos run: 10 orders", panels); err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	kinds := map[string]int{}
	var texts []string
	d := xml.NewDecoder(&b)
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			for _, a := range el.Attr {
				switch {
				case el.Name.Local == "polyline" && a.Name.Local == "data-name":
					series[a.Value]++
				case el.Name.Local == "line" && a.Name.Local == "data-kind":
					kinds[a.Value]++
				}
			}
		case xml.CharData:
			texts = append(texts, string(el))
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	for _, name := range []string{"throughput (deliveries/s, 3 s window)", "in flight (received, not deleted)", "waiting in the queue", "dead-letter queue"} {
		if series[name] != 2 {
			t.Errorf("series %q drawn %d times, want once per panel", name, series[name])
		}
	}
	if kinds[EventKill] != 1 || kinds[EventFreeze] != 1 || kinds[EventTimeout] != 1 {
		t.Errorf("event marks %v", kinds)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"Chaos run: 10 orders", "lease mode", "transactional mode & <more>", "deliveries / s", "DLQ depth", "1:30", "faults", "time since the first send (m:ss)"} {
		if !strings.Contains(all, want) {
			t.Errorf("no text %q", want)
		}
	}
}

func TestTimeStep(t *testing.T) {
	for span, want := range map[float64]float64{10: 1, 100: 10, 119: 10, 482: 60, 900: 120, 100000: 3600} {
		if got := timeStep(span); got != want {
			t.Errorf("timeStep(%v) = %v, want %v", span, got, want)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct {
		span float64
		n    int
		want float64
	}{{100, 4, 25 * 2}, {300, 10, 50}, {7, 4, 2}, {0, 4, 1}, {1000, 4, 500}} {
		if got := niceStep(c.span, c.n); got != c.want {
			t.Errorf("niceStep(%v, %d) = %v, want %v", c.span, c.n, got, c.want)
		}
	}
}

func TestSteadyRate(t *testing.T) {
	var samples []Sample
	for i := range 100 {
		d := int64(i * 100) // 100 a second …
		if i >= 90 {
			d = 8900 + int64(i-89) // … then a trickle
		}
		samples = append(samples, Sample{T: time.Duration(i) * time.Second, Deliveries: d})
	}
	if got := SteadyRate(samples, 10*time.Second); got != 100 {
		t.Fatalf("steady rate %v, want 100", got)
	}
	if SteadyRate(samples[:5], 10*time.Second) != 0 {
		t.Fatal("too short a run has no steady rate")
	}
}
