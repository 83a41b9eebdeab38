// Package cpuprof says where the CPU of a Go driver run went: it reads the
// stacks of a CPU profile (the text of `go tool pprof -traces`) and splits
// the samples by who owns the code: pkg/idem, the AWS SDK, net/http and
// syscalls, crypto, encoding/json, the runtime and GC, the rest.
//
// Two views. Self: each sample goes to the function it was taken in (the
// leaf), which is what "pkg/idem's own code" means. Caller: work done by
// helpers (the standard library, and the SDK's feature/dynamodb packages,
// which the store calls to build expressions and decode items) goes to the
// nearest caller that is not a helper, so that the hashing, allocation,
// decoding and JSON that pkg/idem asks for count as pkg/idem, and what the
// SDK asks for as the SDK; samples with no such caller (GC workers, the
// scheduler, net/http's connection loops) stay where they are.
//
// Parsing text rather than the profile's protobuf keeps the bench free of a
// pprof dependency; `go tool pprof` is there wherever `go run` is.
package cpuprof

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Categories, in report order.
const (
	Ours    = "pkg/idem"
	Driver  = "bench driver"
	SDK     = "AWS SDK, aws-lambda-go (github.com/aws/...)"
	NetHTTP = "net/http, net, syscalls"
	Crypto  = "crypto"
	JSON    = "encoding/json"
	Runtime = "runtime, GC, scheduler"
	Other   = "other (std lib, third party)"
)

// Categories lists every category in report order.
var Categories = []string{Ours, SDK, NetHTTP, Crypto, JSON, Runtime, Driver, Other}

// OursPrefix is the import path prefix of the library's own code.
const OursPrefix = "github.com/exactlyonce/sqsidem/pkg/"

// Sample is one distinct stack and the CPU time spent in it.
type Sample struct {
	Value time.Duration
	Stack []string // function names, leaf first
}

// ParseTraces reads the output of `go tool pprof -traces`.
func ParseTraces(r io.Reader) ([]Sample, error) {
	var (
		out []Sample
		cur *Sample
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			cur = nil
			continue
		}
		if cur == nil {
			// The first line of a trace: "      10ms   runtime.futex".
			fields := strings.Fields(line)
			if len(fields) < 2 || !strings.HasPrefix(line, " ") {
				continue // the header (File:, Type:, ...)
			}
			d, err := time.ParseDuration(fields[0])
			if err != nil {
				continue // a header line that starts with a space
			}
			out = append(out, Sample{Value: d, Stack: []string{strings.Join(fields[1:], " ")}})
			cur = &out[len(out)-1]
			continue
		}
		if fn := strings.TrimSpace(line); fn != "" && !strings.HasPrefix(fn, "bytes:") {
			cur.Stack = append(cur.Stack, fn)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cpuprof: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cpuprof: no samples in the traces")
	}
	return out, nil
}

// Package returns the import path of a function name as pprof prints it:
// "github.com/a/b.(*T).M" → "github.com/a/b", "runtime.mallocgc" →
// "runtime", "main.run.func1" → "main".
func Package(fn string) string {
	fn = strings.TrimSuffix(fn, " (inline)")
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// Category returns the category of a function name.
func Category(fn string) string {
	pkg := Package(fn)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				return true
			}
		}
		return false
	}
	switch {
	case strings.HasPrefix(pkg+"/", OursPrefix):
		return Ours
	case pkg == "main" || strings.HasPrefix(pkg, "github.com/exactlyonce/sqsidem/"):
		return Driver
	case strings.HasPrefix(pkg, "github.com/aws/"):
		return SDK
	case has("net", "syscall", "internal/poll", "internal/runtime/syscall", "bufio", "vendor/golang.org/x/net", "internal/syscall"):
		return NetHTTP
	case has("crypto", "hash", "vendor/golang.org/x/crypto"):
		return Crypto
	case has("encoding/json"):
		return JSON
	case has("runtime", "internal/runtime", "gcWriteBarrier") || strings.HasPrefix(fn, "type:") || !strings.Contains(fn, "."):
		return Runtime
	}
	return Other
}

// helper reports whether a function's work belongs to its caller in the
// Caller view: the Go distribution (no dot in the first path element), and
// the SDK's DynamoDB helpers (attributevalue, expression).
func helper(fn string) bool {
	pkg := Package(fn)
	first, _, _ := strings.Cut(pkg, "/")
	return (pkg != "main" && !strings.Contains(first, ".")) ||
		strings.HasPrefix(pkg, "github.com/aws/aws-sdk-go-v2/feature/dynamodb/")
}

// Split is the CPU of a profile per category, in both views.
type Split struct {
	Total  time.Duration
	Self   map[string]time.Duration
	Caller map[string]time.Duration
	// TopOurs are pkg/idem's functions by self time, largest first.
	TopOurs []Func
}

// Func is one function's self time.
type Func struct {
	Name string
	Self time.Duration
}

// Classify splits samples by category.
func Classify(samples []Sample) Split {
	s := Split{Self: map[string]time.Duration{}, Caller: map[string]time.Duration{}}
	ours := map[string]time.Duration{}
	for _, smp := range samples {
		if len(smp.Stack) == 0 {
			continue
		}
		s.Total += smp.Value
		leaf := smp.Stack[0]
		cat := Category(leaf)
		s.Self[cat] += smp.Value
		if cat == Ours {
			ours[strings.TrimSuffix(leaf, " (inline)")] += smp.Value
		}
		owner := cat
		if helper(leaf) {
			for _, fn := range smp.Stack[1:] {
				if !helper(fn) {
					owner = Category(fn)
					break
				}
			}
		}
		s.Caller[owner] += smp.Value
	}
	for name, d := range ours {
		s.TopOurs = append(s.TopOurs, Func{name, d})
	}
	sort.Slice(s.TopOurs, func(i, j int) bool {
		if s.TopOurs[i].Self != s.TopOurs[j].Self {
			return s.TopOurs[i].Self > s.TopOurs[j].Self
		}
		return s.TopOurs[i].Name < s.TopOurs[j].Name
	})
	return s
}

// Share returns d as a fraction of the total (0 for an empty profile).
func (s Split) Share(d time.Duration) float64 {
	if s.Total <= 0 {
		return 0
	}
	return float64(d) / float64(s.Total)
}
