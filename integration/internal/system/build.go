package system

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/exactlyonce/sqsidem/integration/internal/assembly"
)

// BuildTags are the build tags of the suite's host binaries: the
// runtime's and the producer's fault switches compiled in (what is
// deployed has none).
const BuildTags = "lambda.norpc,sqsidem_faults"

// BuildLambdas compiles the consumer and producer for this machine into dir,
// with BuildTags, as the Makefile's build/host does, and returns their
// paths.
func BuildLambdas(ctx context.Context, root, dir string) (consumer, producer string, err error) {
	for _, name := range []string{"consumer", "producer"} {
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", BuildTags, "-trimpath", "-o", out, "./functions/"+name)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("system: build %s: %w\n%s", name, err, b)
		}
	}
	return filepath.Join(dir, "consumer"), filepath.Join(dir, "producer"), nil
}

// Assembly is the directory of the synthesized cloud assembly the suite
// provisions from: $SQSIDEM_ASSEMBLY if set; else, with AWS_ENDPOINT_URL
// set (LocalStack), cdk.localstack.out, the test profile with timeouts
// scaled for a slower endpoint (`make synth-localstack`); else cdk.test.out
// (`make synth-test`).
func Assembly() string {
	if dir := os.Getenv("SQSIDEM_ASSEMBLY"); dir != "" {
		return dir
	}
	if os.Getenv("AWS_ENDPOINT_URL") != "" {
		return "cdk.localstack.out"
	}
	return "cdk.test.out"
}

// FindTemplate returns the template of the one stack in the assembly (see
// Assembly) under root.
func FindTemplate(root string) (string, error) {
	dir := Assembly()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	stack, err := assembly.Only(dir)
	if err != nil {
		return "", fmt.Errorf("system: %w (run `make synth-test`, or `make synth-localstack` for LocalStack)", err)
	}
	return stack.Template, nil
}
