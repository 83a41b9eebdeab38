// Package cdktest helps test a CDK app that uses the construct, in Go: one
// jsii runtime per test binary (Main), a dummy Lambda asset (Code), and a
// synthesized template parsed into Go maps (Synth, Template) for the checks
// CDK's assertions cannot express. The construct's own tests and the
// template's use it; so can a team's (this package's example_test.go,
// which go test runs):
//
//	func TestMain(m *testing.M) { cdktest.Main(m) }
//
//	func TestStack(t *testing.T) {
//		app := awscdk.NewApp(nil)
//		stack := awscdk.NewStack(app, jsii.String("Shop"), nil)
//		exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
//			Code:   cdktest.Code(),
//			Config: exactlyonce.Config{Key: "orderId"},
//		})
//		fn := cdktest.Synth(t, stack).One(t, "AWS::Lambda::Function", "Orders")
//		if got := cdktest.Env(fn)[consumer.EnvKey]; got != "orderId" {
//			t.Errorf("%s = %v, want orderId", consumer.EnvKey, got)
//		}
//	}
package cdktest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// assetDir holds a dummy bootstrap: Code_FromAsset only needs the directory.
var assetDir string

// Main is TestMain for a package of CDK tests.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "infra-assets-")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("dummy"), 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	assetDir = dir
	code := m.Run() // one jsii runtime (node process) serves every test
	if !raceEnabled {
		// Under -race, skip it: Close races with jsii's own watcher goroutine
		// (see race.go); the node process exits when our stdin closes.
		jsii.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// AssetDir is a directory with a dummy bootstrap, valid during Main.
func AssetDir() string { return assetDir }

// Code is a Lambda asset of the dummy bootstrap.
func Code() awslambda.Code {
	return awslambda.Code_FromAsset(jsii.String(assetDir), nil)
}

// Check runs a CDK assertion, which panics on failure, as a test failure.
func Check(t testing.TB, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

// Panics returns the panic value of f as a string, "" if it returned.
func Panics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// Resource is one resource of a parsed template.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
	DependsOn  any
}

// Template is a synthesized stack: CDK's assertions and the parsed JSON.
type Template struct {
	assertions.Template
	Resources map[string]Resource
	Outputs   map[string]any
}

// Synth synthesizes stack.
func Synth(t testing.TB, stack awscdk.Stack) Template {
	t.Helper()
	tpl := assertions.Template_FromStack(stack, nil)
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	parsed := Template{Template: tpl}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	return parsed
}

// ByType returns the properties of every resource of a type, keyed by
// logical id.
func (c Template) ByType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range c.Resources {
		if r.Type == typ {
			out[id] = r.Properties
		}
	}
	return out
}

// One returns the single resource of a type whose logical id has the
// prefix; the integration suite finds resources the same way.
func (c Template) One(t testing.TB, typ, prefix string) map[string]any {
	t.Helper()
	var found []map[string]any
	for id, p := range c.ByType(typ) {
		if strings.HasPrefix(id, prefix) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s with logical id prefix %q, got %d", typ, prefix, len(found))
	}
	return found[0]
}

// Env returns the environment variables of a function's properties.
func Env(fn map[string]any) map[string]any {
	env, _ := fn["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

// Num is a JSON number, 0 if v is none.
func Num(v any) float64 { f, _ := v.(float64); return f }

// Strings is a JSON string or list as strings.
func Strings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// JSON is v marshalled, for substring checks on intrinsic functions.
func JSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// NagFindings is every error and warning cdk-nag's AwsSolutions and
// Serverless packs annotated in stack, as "<rule> at <path>", sorted.
func NagFindings(stack awscdk.Stack) []string {
	ann := assertions.Annotations_FromStack(stack)
	var found []string
	for _, pack := range []string{"AwsSolutions-.*", "Serverless-.*"} {
		match := assertions.Match_StringLikeRegexp(jsii.String(pack))
		for _, m := range append(*ann.FindError(jsii.String("*"), match), *ann.FindWarning(jsii.String("*"), match)...) {
			//lint:ignore SA1019 the assertions API of awscdk 2.270 returns this type; its replacement is not in Go
			entry, id := m.Entry, m.Id
			rule, _, _ := strings.Cut(fmt.Sprint(entry.Data), ":")
			found = append(found, rule+" at "+*id)
		}
	}
	slices.Sort(found)
	return found
}
