package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// requireRedis is the environment variable that turns a missing
// redis-server into a failure instead of a skip (make test sets it), as in
// pkg/idem/redisstore's tests.
const requireRedis = "SQSIDEM_REQUIRE_REDIS"

// startRedis starts a redis-server of the test's own on 127.0.0.1 and a
// free port, without persistence, killed by its PID when the test ends
// (and by the kernel if the test binary dies first, on Linux). It returns
// its URL and a client. Without redis-server on PATH the test is skipped,
// unless SQSIDEM_REQUIRE_REDIS=1.
func startRedis(t *testing.T) (string, *redis.Client) {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found on PATH (integration/scripts/redis.sh install, or apt-get install redis-server)"
		if os.Getenv(requireRedis) == "1" {
			t.Fatalf("%s; %s=1 requires it", msg, requireRedis)
		}
		t.Skipf("%s, or set %s=1 to fail instead of skipping", msg, requireRedis)
	}
	for range 3 { // another process may take the free port before the server does
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		dir := t.TempDir()
		logFile, err := os.Create(filepath.Join(dir, "redis.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no")
		cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = logFile, logFile, sysProcAttr()
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", path, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill() // by PID
			<-exited
		})
		url := "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
		client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		if answers(t, client, exited) {
			return url, client
		}
	}
	t.Fatal("redis-server did not start on 3 free ports")
	return "", nil
}

// answers waits until the server answers PING (true) or exits (false: its
// port was taken), failing t after a minute: generous, since the machine
// may be loaded.
func answers(t *testing.T, client *redis.Client, exited <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		switch {
		case err == nil:
			return true
		case time.Now().After(deadline):
			t.Fatalf("redis-server at %s: no answer to PING after a minute: %v", client.Options().Addr, err)
		}
		select {
		case <-exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
