package exactlyonce

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The context keys of the LocalStack preset (cdk synth -c key=value). The
// kit's command onlocalstack (integration/kit/cmd/onlocalstack) sets them;
// an app needs no code for them.
const (
	// ContextLocalStack "true" gives every Consumer of the app the
	// LocalStack preset: Config.LocalStack, and, when ConsumerProps.Main
	// is set, a bootstrap built for this machine with the fault switches.
	ContextLocalStack = "sqsidem:localstack"
	// ContextBuildDir is where the construct builds ConsumerProps.Main
	// (default: sqsidem-build/<hash of the app's directory> under the
	// system's temporary directory), a directory per consumer's construct
	// path.
	ContextBuildDir = "sqsidem:build"
)

// LocalStack returns c with the settings of the proof on LocalStack,
// which runs the function on this machine and answers about 2.5 times as
// slowly as the lightweight emulators: a 4 s function (visibility 24 s)
// with a 1 s safety margin, 3 receives before the dead-letter queue (the
// kit's DLQ waits are (3+1) × 24 s), no reserved concurrency, and
// everything destroyed with the stack (RemovalPolicy_DESTROY, a week of
// logs). Mode, key, namespace, batch size and the rest stay c's.
func (c Config) LocalStack() Config {
	c.FunctionTimeout = 4 * time.Second
	c.SafetyMargin = time.Second
	c.MaxReceiveCount = 3
	c.ReservedConcurrency = 0
	c.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
	c.LogRetention = awslogs.RetentionDays_ONE_WEEK
	return c
}

// OnLocalStack reports whether scope's app is synthesized with the
// LocalStack preset (-c sqsidem:localstack=true).
func OnLocalStack(scope constructs.Construct) bool {
	v, _ := scope.Node().TryGetContext(jsii.String(ContextLocalStack)).(string)
	return v == "true"
}

// code is the function's code: under the LocalStack preset, Main built
// for this machine with the fault switches (the kit's crash and poison
// scenarios switch them on per message; FAULT_FROM_MESSAGE), or Code as
// it is when Main is empty (then it must be built for this machine);
// otherwise Code, or Main built for arm64 when Code is nil.
func (c *Consumer) code(props *ConsumerProps, env map[string]*string) awslambda.Code {
	local := OnLocalStack(c)
	switch {
	case local && props.Main == "":
		awscdk.Annotations_Of(c).AddWarningV2(jsii.String("sqsidem:no-main"), jsii.String(
			"ConsumerProps.Main is empty: on LocalStack the function runs Code as it is (it must be built for this machine), without the fault switches the kit's crash and poison scenarios need"))
		return props.Code
	case !local && props.Code != nil:
		return props.Code
	}
	dir, _ := c.Node().TryGetContext(jsii.String(ContextBuildDir)).(string)
	if dir == "" {
		dir = defaultBuildDir()
	}
	dir = filepath.Join(dir, strings.ReplaceAll(strings.Trim(*c.Node().Path(), "/"), "/", "-"))
	arch, tags := "arm64", "lambda.norpc"
	if local {
		arch, tags = runtime.GOARCH, "lambda.norpc,sqsidem_faults"
		env[consumer.EnvFaultFromMessage] = jsii.String("true")
	}
	if err := build(props.Main, dir, arch, tags); err != nil {
		panic(fmt.Sprintf("exactlyonce: %s: %v", *c.Node().Path(), err))
	}
	return awslambda.Code_FromAsset(jsii.String(dir), nil)
}

// defaultBuildDir is sqsidem-build/<the app directory's hash> under the
// system's temporary directory: two apps never share a bootstrap.
func defaultBuildDir() string {
	wd, _ := os.Getwd()
	sum := sha256.Sum256([]byte(wd))
	return filepath.Join(os.TempDir(), "sqsidem-build", hex.EncodeToString(sum[:6]))
}

// build builds the Go package main into dir/bootstrap for Linux on arch,
// with the build tags tags, reproducibly (the asset's hash changes only
// when the code does).
func build(main, dir, arch, tags string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-tags", tags, "-trimpath", "-buildvcs=false", "-ldflags=-s -w",
		"-o", filepath.Join(dir, "bootstrap"), main)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (GOARCH=%s, -tags %s): %v\n%s", main, arch, tags, err, out)
	}
	return nil
}
