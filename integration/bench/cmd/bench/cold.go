package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// coldTimeout bounds one cold start: Lambda's init phase limit.
const coldTimeout = 10 * time.Second

// cold measures one cold start of a system: exec to ready, and the RSS at
// that moment. Ready is, for pkg/idem, the real consumer binary asking the
// Runtime API for its first invocation (GET /next); for Powertools, the
// driver's cold scenario printing its JSON line after importing the
// Lambda-like consumer module.
func (r *runner) cold(ctx context.Context, system string, repeat int) report.Sample {
	s := report.Sample{System: system, Case: report.Cold, Repeat: repeat}
	var (
		took time.Duration
		rss  int64
		err  error
	)
	if system == report.Go {
		took, rss, err = r.coldConsumer(ctx)
	} else {
		took, rss, err = r.coldDriver(ctx, system)
	}
	if err != nil {
		s.Failure = err.Error()
		return s
	}
	s.Metrics = map[string]float64{report.ColdMs: took.Seconds() * 1e3, report.RSSMB: float64(rss) / 1024}
	return s
}

// coldDriver times exec → the JSON line of a Powertools driver's cold
// scenario, and takes the RSS from it.
func (r *runner) coldDriver(ctx context.Context, system string) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, coldTimeout)
	defer cancel()
	argv := append(append([]string{}, r.drivers[system]...), driver.Cold, "--endpoint", r.proxy.URL(), "--table", "bench-cold")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = childEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	line, rerr := bufio.NewReader(out).ReadBytes('\n')
	took := time.Since(start)
	werr := cmd.Wait()
	if rerr != nil || werr != nil {
		return 0, 0, fmt.Errorf("%s cold: %w", system, errors.Join(rerr, werr))
	}
	var res driver.Result
	if err := json.Unmarshal(line, &res); err != nil || !res.OK {
		return 0, 0, fmt.Errorf("%s cold: bad JSON %q: %v", system, line, err)
	}
	return took, res.RSSKB, nil
}

// coldConsumer times exec → first GET /next of the consumer binary under a
// minimal Runtime API, and reads its VmRSS while it waits for the answer.
func (r *runner) coldConsumer(ctx context.Context) (time.Duration, int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	next := make(chan time.Time, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/2018-06-01/runtime/invocation/next" {
			http.NotFound(w, req)
			return
		}
		select {
		case next <- time.Now():
		default:
		}
		<-req.Context().Done() // no invocation: the process is killed first
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	cmd := exec.Command(r.cfg.consumer)
	cmd.Env = append(childEnv(),
		"AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME=consumer", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/consumer", "AWS_LAMBDA_LOG_STREAM_NAME=bench", "AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"_HANDLER=bootstrap", "AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB="+r.proxy.URL(),
		consumer.EnvTable+"=bench-cold", consumer.EnvKey+"="+contract.KeyField,
		consumer.EnvCacheSize+"=0", // no local cache, as on the Powertools side
	)
	for _, t := range contract.EffectTables { // the effect's tables: named, never touched before ready
		cmd.Env = append(cmd.Env, t.Env+"=bench-cold-"+strings.ToLower(t.Env))
	}
	for _, s := range contract.EffectSettings { // the effect's required settings (the partner's URL): never called before ready
		if s.Required {
			cmd.Env = append(cmd.Env, s.Env+"="+s.Example)
		}
	}
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(coldTimeout):
		}
	}()
	select {
	case at := <-next:
		rss := vmRSS(cmd.Process.Pid)
		if rss == 0 {
			return 0, 0, errors.New("consumer cold: no VmRSS")
		}
		return at.Sub(start), rss, nil
	case err := <-exited:
		exited <- err // for the deferred wait
		return 0, 0, fmt.Errorf("consumer exited before asking for an invocation: %v", err)
	case <-time.After(coldTimeout):
		return 0, 0, fmt.Errorf("consumer not ready after %s", coldTimeout)
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// vmRSS reads VmRSS of a process in kB; 0 when it cannot.
func vmRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}
