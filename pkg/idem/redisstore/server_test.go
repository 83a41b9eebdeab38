package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// requireRedis is the environment variable that turns a missing
// redis-server into a failure instead of a skip (make test sets it, so that
// CI never skips the suite).
const requireRedis = "SQSIDEM_REQUIRE_REDIS"

// startTimeout bounds how long a server may take to answer PING: generous,
// since the machine may be loaded.
const startTimeout = 60 * time.Second

// server is a redis-server process of a test's own on 127.0.0.1 and a free
// port. It is killed by its PID when the test ends (and by the kernel if
// the test binary dies first, on Linux). A test may kill, stop and restart
// it to play a crash, a freeze or a reboot.
type server struct {
	tb     testing.TB
	path   string
	args   []string // the command line, port and directory included
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
	client *redis.Client
}

// baseArgs are every server's: no persistence (a test adds it), and no
// wait before a primary streams its data to a new replica (5 s by default,
// for more replicas to join the same transfer).
var baseArgs = []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
	"--repl-diskless-sync-delay", "0"}

// startServer starts a server without persistence and returns a client of
// it. Without redis-server on PATH tb is skipped, unless
// SQSIDEM_REQUIRE_REDIS=1.
func startServer(tb testing.TB) *redis.Client {
	tb.Helper()
	return newServer(tb).client
}

// newServer starts a server with baseArgs and then args (a later setting
// wins), and waits until it answers.
func newServer(tb testing.TB, args ...string) *server {
	tb.Helper()
	path := serverPath(tb, "redis-server")
	var errs []error
	for range 3 { // another process may take the free port before the server does
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		s := &server{tb: tb, path: path, dir: tb.TempDir(), port: port}
		s.args = append([]string{"--port", strconv.Itoa(port), "--dir", s.dir}, append(baseArgs, args...)...)
		if err = s.start(); err == nil {
			return s
		}
		errs = append(errs, err)
	}
	tb.Fatalf("redis-server did not start: %v", errors.Join(errs...))
	return nil
}

// serverPath finds a program of the redis-server package, or skips tb.
func serverPath(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		msg := name + " not found on PATH: install it (integration/scripts/redis.sh install, or apt-get install redis-server)"
		if os.Getenv(requireRedis) == "1" {
			tb.Fatalf("%s; %s=1 requires it", msg, requireRedis)
		}
		tb.Skipf("%s, or set %s=1 to fail instead of skipping", msg, requireRedis)
	}
	return path
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// start runs the process and waits until it answers and has loaded its
// data (after a restart with persistence).
func (s *server) start() error {
	logPath := filepath.Join(s.dir, "redis.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(s.path, s.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	s.tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once it runs
		_ = cmd.Process.Kill()                  // by PID
		<-exited
	})
	if s.client == nil {
		s.client = redis.NewClient(&redis.Options{Addr: s.addr(), ContextTimeoutEnabled: true})
		s.tb.Cleanup(func() { _ = s.client.Close() })
	}
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := s.client.Info(ctx, "persistence").Result()
		cancel()
		if err == nil && !strings.Contains(info, "loading:1") {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d: not ready after %s: %v", s.port, startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL, as a crash does: nothing is flushed.
func (s *server) kill() {
	s.tb.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	if err := s.cmd.Process.Kill(); err != nil {
		s.tb.Fatalf("kill redis-server %d: %v", s.cmd.Process.Pid, err)
	}
	<-s.exited
}

// restart starts the process again on the same port and directory, as
// after a reboot.
func (s *server) restart() {
	s.tb.Helper()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

// signal sends sig to the process: SIGSTOP freezes it (it stops answering,
// its data intact), SIGCONT resumes it.
func (s *server) signal(sig syscall.Signal) {
	s.tb.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatalf("signal %v to redis-server %d: %v", sig, s.cmd.Process.Pid, err)
	}
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverVersion returns the server's redis_version (or valkey_version).
func serverVersion(tb testing.TB, client *redis.Client) string {
	tb.Helper()
	info, err := client.InfoMap(context.Background(), "server").Result()
	if err != nil {
		tb.Fatalf("INFO server: %v", err)
	}
	s := info["Server"]
	if v := s["valkey_version"]; v != "" {
		return "valkey " + v
	}
	return "redis " + s["redis_version"]
}

// waitFor polls cond until it holds, failing tb after timeout with what it
// waited for and cond's last error.
func waitFor(tb testing.TB, what string, timeout time.Duration, cond func() (bool, error)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("waited %s for %s: %v", timeout, what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// infoField returns one field of the server's INFO section.
func infoField(client *redis.Client, section, field string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := client.Info(ctx, section).Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in INFO %s", field, section)
}
