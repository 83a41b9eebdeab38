package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// startRedis starts a redis-server of the bench's own (127.0.0.1, a free
// port, no persistence) for the redisstore cases, when one is on PATH and
// the redisstore driver builds. Otherwise there are no jobs and note says
// why. url is the server's; stop kills it by its PID.
func startRedis(ctx context.Context, cfg config) (jobs []job, url string, stop func(), note string) {
	stop = func() {}
	if !cfg.redis || !cfg.systems[report.Go] {
		return nil, "", stop, ""
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", stop, "pkg/idem on Redis: skipped, no redis-server on PATH (integration/scripts/redis.sh install)."
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", cfg.redisDriver, "./integration/bench/redisdriver")
	build.Dir = cfg.root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, "", stop, fmt.Sprintf("pkg/idem on Redis: skipped, the redisstore driver does not build: %v: %s", err, lastLine(out))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", stop, "pkg/idem on Redis: skipped: " + err.Error()
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", stop, "pkg/idem on Redis: skipped: " + err.Error()
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitPong(addr, 10*time.Second); err != nil {
		stop()
		return nil, "", func() {}, "pkg/idem on Redis: skipped, redis-server did not answer: " + err.Error()
	}
	return redisPlan(cfg), "redis://" + addr, stop, ""
}

// waitPong waits until a Redis server answers PING.
func waitPong(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, err = c.Write([]byte("PING\r\n"))
			var line string
			if err == nil {
				line, err = bufio.NewReader(c).ReadString('\n')
			}
			c.Close()
			if err == nil && line == "+PONG\r\n" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
