package exactlyonce_test

import (
	"debug/buildinfo"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// localStackStack is a stack with one consumer whose app has the given
// context.
func localStackStack(t *testing.T, context map[string]any, props exactlyonce.ConsumerProps) awscdk.Stack {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &context})
	stack := awscdk.NewStack(app, jsii.String("Local"), nil)
	exactlyonce.NewConsumer(stack, "Orders", &props)
	return stack
}

// bootstrapOf reads the build information of the bootstrap the construct
// built into dir (one directory per consumer).
func bootstrapOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "bootstrap"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one bootstrap under %s, got %v (%v)", dir, files, err)
	}
	info, err := buildinfo.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	return got
}

func TestLocalStackPreset(t *testing.T) {
	build := t.TempDir()
	stack := localStackStack(t, map[string]any{exactlyonce.ContextLocalStack: "true", exactlyonce.ContextBuildDir: build},
		exactlyonce.ConsumerProps{Code: cdktest.Code(), Main: "./testdata/main",
			Config: exactlyonce.Config{FunctionTimeout: 30e9, MaxReceiveCount: 5, ReservedConcurrency: 5, MaxConcurrency: 2}})
	tpl := cdktest.Synth(t, stack)
	fn := tpl.One(t, "AWS::Lambda::Function", "OrdersConsumer")
	if got := cdktest.Num(fn["Timeout"]); got != 4 {
		t.Errorf("timeout %v s, want the preset's 4", got)
	}
	if v, ok := fn["ReservedConcurrentExecutions"]; ok {
		t.Errorf("reserved concurrency %v under the preset", v)
	}
	env := cdktest.Env(fn)
	if env[consumer.EnvFaultFromMessage] != "true" || env[consumer.EnvMaxReceiveCount] != "3" || env[consumer.EnvSafetyMargin] != "1s" {
		t.Errorf("env %v: want %s=true, %s=3, %s=1s", env, consumer.EnvFaultFromMessage, consumer.EnvMaxReceiveCount, consumer.EnvSafetyMargin)
	}
	cdktest.Check(t, "queues and table destroyed with the stack", func() {
		tpl.AllResources(jsii.String("AWS::SQS::Queue"), map[string]any{"DeletionPolicy": "Delete"})
		tpl.AllResources(jsii.String("AWS::DynamoDB::Table"), map[string]any{"DeletionPolicy": "Delete"})
	})
	settings := bootstrapOf(t, build)
	if settings["GOARCH"] != runtime.GOARCH || settings["GOOS"] != "linux" || !strings.Contains(settings["-tags"], "sqsidem_faults") {
		t.Errorf("bootstrap built with %v: want linux/%s with sqsidem_faults", settings, runtime.GOARCH)
	}
}

// Without the context, Main alone is built for Lambda's arm64, without the
// fault switches, and the configuration is the app's.
func TestMainBuiltForLambda(t *testing.T) {
	build := t.TempDir()
	stack := localStackStack(t, map[string]any{exactlyonce.ContextBuildDir: build},
		exactlyonce.ConsumerProps{Main: "./testdata/main", Config: exactlyonce.Config{FunctionTimeout: 30e9}})
	fn := cdktest.Synth(t, stack).One(t, "AWS::Lambda::Function", "OrdersConsumer")
	if got := cdktest.Num(fn["Timeout"]); got != 30 {
		t.Errorf("timeout %v s, want the app's 30", got)
	}
	if v, ok := cdktest.Env(fn)[consumer.EnvFaultFromMessage]; ok {
		t.Errorf("%s=%v outside the preset", consumer.EnvFaultFromMessage, v)
	}
	settings := bootstrapOf(t, build)
	if settings["GOARCH"] != "arm64" || strings.Contains(settings["-tags"], "sqsidem_faults") {
		t.Errorf("bootstrap built with %v: want linux/arm64 without the fault switches", settings)
	}
}

func TestMainOrCodeRequired(t *testing.T) {
	msg := cdktest.Panics(func() { localStackStack(t, nil, exactlyonce.ConsumerProps{}) })
	if !strings.Contains(msg, "Code or props.Main is required") {
		t.Errorf("panic %q", msg)
	}
	msg = cdktest.Panics(func() {
		localStackStack(t, map[string]any{exactlyonce.ContextBuildDir: t.TempDir()}, exactlyonce.ConsumerProps{Main: "./testdata/nothing"})
	})
	if !strings.Contains(msg, "go build ./testdata/nothing") {
		t.Errorf("panic %q: want the build's error", msg)
	}
}
