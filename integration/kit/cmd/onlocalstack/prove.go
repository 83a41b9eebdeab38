package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/exactlyonce/sqsidem/integration/kit"
)

// LocalStack's account and region (localstack.sh's client environment).
const environment = "aws://000000000000/us-east-1"

// prove is steps 2 to 5 against the LocalStack of AWS_ENDPOINT_URL.
func prove(ctx context.Context, o options, t tools) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(wd))
	work := filepath.Join(o.cache, "apps", filepath.Base(wd)+"-"+hex.EncodeToString(sum[:4]))
	assembly := filepath.Join(work, "cdk.out")
	testBin := filepath.Join(work, "kit.test")
	if err := os.RemoveAll(assembly); err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	cdkEnv := []string{"CDK_HOME=" + filepath.Join(o.cache, "cdk-home"), "CDK_DISABLE_CLI_TELEMETRY=true",
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20"}
	testEnv := []string{}

	synthArgs := []string{"synth", "--no-notices", "-q", "-o", assembly,
		"-c", "sqsidem:localstack=true", "-c", "sqsidem:build=" + filepath.Join(work, "build")}
	if o.stub {
		stub, err := kit.StartStub("127.0.0.1:0")
		if err != nil {
			return err
		}
		defer stub.Close()
		fmt.Fprintf(os.Stderr, "onlocalstack: the partner stub at %s\n", stub.URL())
		testEnv = append(testEnv, kit.EnvStub+"="+stub.URL())
		for i, kv := range o.context {
			o.context[i] = strings.ReplaceAll(kv, "{stub}", stub.URL())
		}
	}
	for _, kv := range o.context {
		synthArgs = append(synthArgs, "-c", kv)
	}

	// The synth (mostly go build and the app's go run), the bootstrap
	// (from a directory without cdk.json, so that it needs no app) and
	// the tests' compile run at the same time.
	errs := parallel(
		func() error {
			return step("synth with the LocalStack preset", func() error {
				return command(ctx, "", cdkEnv, t.bin("cdk"), synthArgs...).Run()
			})
		},
		func() error {
			return step("bootstrap "+environment, func() error {
				return command(ctx, work, cdkEnv, t.bin("cdklocal"), "--no-notices", "bootstrap", environment).Run()
			})
		},
		func() error {
			return step("compile the tests of "+o.pkg, func() error {
				return command(ctx, "", nil, "go", "test", "-c", "-tags", o.tags, "-o", testBin, o.pkg).Run()
			})
		},
		func() error { return createSecrets(ctx, o.secrets) },
	)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	stacks, err := stacksOf(assembly)
	if err != nil {
		return err
	}
	for _, s := range stacks {
		if err := kit.Forget(s); err != nil {
			return err
		}
	}
	cdklocal := func(args ...string) error {
		return command(ctx, "", cdkEnv, t.bin("cdklocal"), append([]string{"--no-notices", "--app", assembly}, args...)...).Run()
	}
	err = step("deploy "+strings.Join(stacks, ", "), func() error {
		return cdklocal("deploy", "--all", "--require-approval", "never")
	})
	if err == nil {
		err = step("the kit's tests", func() error {
			dir, err := pkgDir(ctx, o.pkg)
			if err != nil {
				return err
			}
			return command(ctx, dir, testEnv, testBin, "-test.count=1", "-test.v", "-test.timeout="+o.timeout.String(), "-test.run="+o.run).Run()
		})
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "onlocalstack: -keep: the stacks stay deployed (destroy: cdklocal --app %s destroy --all --force)\n", assembly)
		return err
	}
	// The destroy runs on a context of its own: after an interrupt too.
	dctx := context.WithoutCancel(ctx)
	derr := step("destroy", func() error {
		return command(dctx, "", cdkEnv, t.bin("cdklocal"), "--no-notices", "--app", assembly, "destroy", "--all", "--force").Run()
	})
	checked, lerr := nothingLeft(dctx, stacks)
	if err == nil && checked == 0 {
		// A test file with no kit.Run (or a -run that matches none) passes
		// and proves nothing: say so rather than exit 0.
		err = fmt.Errorf("the tests (-run %s) ran kit.Run on none of the stacks %s: nothing was proven", o.run, strings.Join(stacks, ", "))
	}
	return errors.Join(err, derr, lerr)
}

// nothingLeft checks each stack kit.Run recorded, and says how many.
func nothingLeft(ctx context.Context, stacks []string) (checked int, _ error) {
	var errs []error
	for _, s := range stacks {
		left, n, err := kit.Leftovers(ctx, s, nil)
		if err != nil && errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "onlocalstack: stack %s: no kit.Run on it, not checked\n", s)
			continue
		}
		checked++
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("after destroy, stack %s: %w", s, err))
		case len(left) > 0:
			errs = append(errs, fmt.Errorf("after destroy, stack %s left behind: %s", s, strings.Join(left, ", ")))
		default:
			fmt.Fprintf(os.Stderr, "onlocalstack: after destroy: nothing left of stack %s (%d resources checked)\n", s, n)
		}
	}
	return checked, errors.Join(errs...)
}

// stacksOf lists the stacks of a cloud assembly (its manifest.json).
func stacksOf(assembly string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(assembly, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m struct {
		Artifacts map[string]struct {
			Type       string `json:"type"`
			Properties struct {
				StackName string `json:"stackName"`
			} `json:"properties"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %w", assembly, err)
	}
	var stacks []string
	for id, a := range m.Artifacts {
		if a.Type != "aws:cloudformation:stack" {
			continue
		}
		name := a.Properties.StackName
		if name == "" {
			name = id
		}
		stacks = append(stacks, name)
	}
	if len(stacks) == 0 {
		return nil, fmt.Errorf("%s: the app synthesized no stack", assembly)
	}
	slices.Sort(stacks)
	return stacks, nil
}

// pkgDir is the directory of a package pattern's single package.
func pkgDir(ctx context.Context, pkg string) (string, error) {
	list := command(ctx, "", nil, "go", "list", "-f", "{{.Dir}}", pkg)
	list.Stdout = nil // Output's
	out, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", pkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// createSecrets creates (or updates) each name=value in LocalStack's
// Secrets Manager.
func createSecrets(ctx context.Context, secrets []string) error {
	if len(secrets) == 0 {
		return nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	sm := secretsmanager.NewFromConfig(cfg)
	for _, kv := range secrets {
		name, value, _ := strings.Cut(kv, "=")
		_, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
		if err != nil && strings.Contains(err.Error(), "ResourceExists") {
			_, err = sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(name), SecretString: aws.String(value)})
		}
		if err != nil {
			return fmt.Errorf("secret %s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "onlocalstack: secret %s created\n", name)
	}
	return nil
}

// parallel runs each f at once and returns their errors.
func parallel(fs ...func() error) []error {
	errs := make([]error, len(fs))
	done := make(chan struct{})
	for i, f := range fs {
		go func() { errs[i] = f(); done <- struct{}{} }()
	}
	for range fs {
		<-done
	}
	return errs
}
