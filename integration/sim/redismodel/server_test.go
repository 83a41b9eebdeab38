package redismodel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests compare the model with a real redis-server of their own, as
// pkg/idem/redisstore's tests start one.

// requireRedis turns a missing redis-server into a failure instead of a
// skip.
const requireRedis = "SQSIDEM_REQUIRE_REDIS"

// startTimeout bounds how long a server may take to answer PING: generous,
// since the machine may be loaded.
const startTimeout = 60 * time.Second

// startServer starts a redis-server on 127.0.0.1 and a free port, without
// persistence, and returns a client of it; the server is killed by its PID
// when tb ends. Without redis-server on PATH tb is skipped, unless
// SQSIDEM_REQUIRE_REDIS=1.
func startServer(tb testing.TB) *redis.Client {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found on PATH (apt-get install redis-server)"
		if os.Getenv(requireRedis) == "1" {
			tb.Fatalf("%s; %s=1 requires it", msg, requireRedis)
		}
		tb.Skipf("%s, or set %s=1 to fail instead of skipping", msg, requireRedis)
	}
	var errs []error
	for range 3 { // another process may take the free port before the server does
		client, err := tryStart(tb, path)
		if err == nil {
			return client
		}
		errs = append(errs, err)
	}
	tb.Fatalf("redis-server did not start: %v", errors.Join(errs...))
	return nil
}

func tryStart(tb testing.TB, path string) (*redis.Client, error) {
	dir := tb.TempDir()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(path,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; nothing to persist
		<-exited
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// One connection, no retries: requests reach the server in the order
	// sent, once each, as the replay needs.
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = client.Close() })
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return client, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("redis-server on port %d exited: %s", port, log)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("redis-server on port %d: no PING after %s: %w", port, startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// setOOM makes the real server's used memory always above maxmemory, with
// noeviction, or lifts the limit.
func setOOM(tb testing.TB, client *redis.Client, on bool) {
	tb.Helper()
	ctx := context.Background()
	limit := "0"
	if on {
		limit = "1"
	}
	if err := client.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		tb.Fatal(err)
	}
	if err := client.ConfigSet(ctx, "maxmemory", limit).Err(); err != nil {
		tb.Fatal(err)
	}
}
