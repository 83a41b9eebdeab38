//go:build integration

package emu

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestEmulatorStartStop checks the process handling: loopback-only binding,
// Stop ends the whole process group, and Stop is idempotent and concurrent-safe.
func TestEmulatorStartStop(t *testing.T) {
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		t.Skipf("AWS_ENDPOINT_URL=%s: the suite uses that endpoint and starts no emulator", ep)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for name, startFn := range map[string]func(context.Context, string) (*Server, error){
		"dynamodb":  StartDynamoDB,
		"elasticmq": StartSQS,
	} {
		t.Run(name, func(t *testing.T) {
			began := time.Now()
			s, err := startFn(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Stop() })
			t.Logf("%s ready at %s in %.1fs", name, s.URL(), time.Since(began).Seconds())

			u, err := url.Parse(s.URL())
			if err != nil {
				t.Fatal(err)
			}
			if ip := nonLoopbackIP(); ip != "" {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, u.Port()), time.Second)
				if err == nil {
					c.Close()
					t.Errorf("%s answers on %s; want 127.0.0.1 only", name, ip)
				}
			}

			pgid := s.Pid()
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.Stop(); err != nil {
						t.Errorf("Stop: %v", err)
					}
				}()
			}
			wg.Wait()
			if err := s.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process group %d still exists after Stop (kill 0: %v)", pgid, err)
			}
		})
	}
}

func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// TestEmulatorStartupFailureShowsLog checks that a JVM dying during startup
// is reported at once, with the tail of its log in the error.
func TestEmulatorStartupFailureShowsLog(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err = start(context.Background(), root, "bogus", port, root, []string{"-version"}, nil, probeSQS)
	if err == nil {
		t.Fatal("start succeeded for a JVM that exits")
	}
	if !strings.Contains(err.Error(), "exited during startup") || !strings.Contains(err.Error(), "version") {
		t.Errorf("error lacks exit notice or log tail:\n%v", err)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("took %v to notice the exit", d)
	}
}
