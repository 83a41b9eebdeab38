//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
)

// libraryModules are the library's modules, by directory.
var libraryModules = map[string]string{
	"github.com/exactlyonce/sqsidem/pkg/idem":             "pkg/idem",
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore": "pkg/idem/dynamostore",
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch":    "pkg/idem/sqsbatch",
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore":  "pkg/idem/redisstore",
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer":    "pkg/idem/consumer",
	"github.com/exactlyonce/sqsidem/integration/kit":      "integration/kit",
}

// notInTheLibrary are the template's tools: a go get of the library must not
// pull any of them.
var notInTheLibrary = []string{
	"github.com/aws/aws-cdk-go", "github.com/aws/jsii-runtime-go", "github.com/aws/constructs-go",
	"github.com/cdklabs/", "golang.org/x/tools", "golang.org/x/lint",
}

// lambdaGoOwn are in the graph because aws-lambda-go's go.mod requires
// testify for its own tests; nothing of them is compiled into a program.
var lambdaGoOwn = []string{"github.com/stretchr/testify", "github.com/davecgh/go-spew", "github.com/pmezard/go-difflib", "gopkg.in/yaml.v3"}

// goRedisOwn is go-redis and its graph: it compiles in go-redis,
// go.uber.org/atomic, cespare/xxhash and golang.org/x/sys; the rest are in
// its go.mod for its own tests and hashing choices (testify and its kin come
// through go.uber.org/atomic's tests).
var goRedisOwn = []string{
	"github.com/redis/go-redis", "github.com/cespare/xxhash", "go.uber.org/atomic", "golang.org/x/sys",
	"github.com/zeebo/xxh3", "github.com/klauspost/cpuid", "github.com/bsm/",
}

// TestLibraryDependencies: a fresh module that imports the library's
// packages gets only what they need. It is what a user's go get sees: the
// module graph of `go list -m all`, in a throwaway module that points at
// this checkout's library modules.
func TestLibraryDependencies(t *testing.T) {
	t.Parallel()
	emulatorsOnly(t)
	root, err := emu.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		imports []string
		allowed []string // module path prefixes allowed besides the library's
	}{
		{"core", []string{"pkg/idem", "pkg/idem/idemtest"}, nil},
		{"dynamodb+sqs", []string{"pkg/idem", "pkg/idem/dynamostore", "pkg/idem/sqsbatch"},
			append([]string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/aws/aws-lambda-go"}, lambdaGoOwn...)},
		{"redis", []string{"pkg/idem", "pkg/idem/redisstore"}, append(goRedisOwn, lambdaGoOwn...)},
		// The consumer runtime: the two stores, the batch adapter, the
		// SDK's config and clients, aws-lambda-go; no CDK.
		{"consumer runtime", []string{"pkg/idem/consumer"},
			slices.Concat([]string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/aws/aws-lambda-go"}, goRedisOwn, lambdaGoOwn)},
		// The proof kit, in a team's test code: the SDK's clients and the
		// runtime's names; no CDK.
		{"proof kit", []string{"integration/kit"},
			slices.Concat([]string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/aws/aws-lambda-go"}, goRedisOwn, lambdaGoOwn)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mods := throwawayModule(t, root, tc.imports)
			var unexpected []string
			for _, m := range mods[1:] { // [0] is the throwaway module
				path := strings.Fields(m)[0]
				if _, ours := libraryModules[path]; ours {
					continue
				}
				if !slices.ContainsFunc(tc.allowed, func(p string) bool { return strings.HasPrefix(path, p) }) {
					unexpected = append(unexpected, m)
				}
				for _, bad := range notInTheLibrary {
					if strings.HasPrefix(path, bad) {
						t.Errorf("go list -m all pulls %s", m)
					}
				}
			}
			t.Logf("%s: go list -m all lists %d modules:\n%s", tc.name, len(mods), strings.Join(mods, "\n"))
			if len(unexpected) > 0 {
				t.Errorf("modules beyond what %v need: %v", tc.imports, unexpected)
			}
		})
	}
}

// throwawayModule creates a module importing the given library packages
// (directories under root) and returns its `go list -m all`.
func throwawayModule(t *testing.T, root string, imports []string) []string {
	t.Helper()
	dir := t.TempDir()
	var gomod, src strings.Builder
	gomod.WriteString("module example.com/consumer\n\ngo 1.26\n")
	for path, d := range libraryModules {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err != nil {
			continue // not in this checkout
		}
		fmt.Fprintf(&gomod, "\nrequire %s v0.0.0\nreplace %s => %s\n", path, path, filepath.Join(root, d))
	}
	src.WriteString("package main\n\nimport (\n")
	for _, imp := range imports {
		fmt.Fprintf(&src, "\t_ \"github.com/exactlyonce/sqsidem/%s\"\n", imp)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	for name, content := range map[string]string{"go.mod": gomod.String(), "main.go": src.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	return strings.Split(strings.TrimSpace(run("list", "-m", "all")), "\n")
}
