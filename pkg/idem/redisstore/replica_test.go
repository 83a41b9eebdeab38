package redisstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Helpers for a primary and a replica on loopback, whose replication the
// test holds back and severs, and a client that follows a failover, as
// Sentinel's does.

// link is a TCP proxy on the replication link, from a replica to its
// primary. Held, it passes nothing either way, as a network that drops the
// link's packets: the primary's writes reach no replica, and no replica's
// acknowledgement reaches a WAIT. Severed, it closes every connection and drops
// what it held, so that a write held back is lost for good. (SIGSTOP on the
// replica would not do: what the primary sent waits in the frozen replica's
// socket buffer and is applied once it resumes.)
type link struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	open     *sync.Cond // signalled when held or cut changes
	held     bool
	cut      bool
	conns    []net.Conn
}

func newLink(tb testing.TB, target string) *link {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	k := &link{listener: l, target: target}
	k.open = sync.NewCond(&k.mu)
	go k.accept()
	tb.Cleanup(k.close)
	return k
}

func (k *link) port() int { return k.listener.Addr().(*net.TCPAddr).Port }

func (k *link) accept() {
	for {
		in, err := k.listener.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", k.target, time.Second)
		k.mu.Lock()
		if err != nil || k.cut {
			k.mu.Unlock()
			in.Close()
			if out != nil {
				out.Close()
			}
			continue
		}
		k.conns = append(k.conns, in, out)
		k.mu.Unlock()
		go k.pipe(out, in)
		go k.pipe(in, out)
	}
}

// pipe copies from src to dst, each read waiting while the link is held:
// what was read then is never written if the link is cut meanwhile.
func (k *link) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		k.mu.Lock()
		for k.held && !k.cut {
			k.open.Wait()
		}
		cut := k.cut
		k.mu.Unlock()
		if cut {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = dst.(*net.TCPConn).CloseWrite()
			}
			return
		}
	}
}

// hold stops the link: what it reads from now on waits, to be dropped by
// sever.
func (k *link) hold() { k.set(func() { k.held = true }) }

// sever cuts the link for good: what it held is dropped, and the replica
// cannot reconnect through it.
func (k *link) sever() {
	k.set(func() { k.cut = true })
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		_ = c.(*net.TCPConn).SetLinger(0) // reset: nothing buffered is sent
		_ = c.Close()
	}
	k.conns = nil
}

func (k *link) set(change func()) {
	k.mu.Lock()
	change()
	k.open.Broadcast()
	k.mu.Unlock()
}

func (k *link) close() {
	_ = k.listener.Close()
	k.sever()
}

// replicaOf starts a server that replicates primary through a link, and
// waits until it is in sync.
func replicaOf(tb testing.TB, primary *server, args ...string) (*server, *link) {
	tb.Helper()
	k := newLink(tb, primary.addr())
	r := newServer(tb, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(k.port())}, args...)...)
	inSync(tb, primary, r)
	return r, k
}

// inSync waits until replica has acknowledged a write to primary, and so
// every write before it. Its link being up is not enough: after the first
// sync a primary starts streaming only once it has seen its child exit and
// the replica's next acknowledgement, which can take a second.
func inSync(tb testing.TB, primary, replica *server) {
	tb.Helper()
	waitFor(tb, "the replica to acknowledge a write", 30*time.Second, func() (bool, error) {
		if up, err := infoField(replica.client, "replication", "master_link_status"); up != "up" {
			return false, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var wait *redis.IntCmd
		_, err := primary.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "test:in-sync")
			wait = redis.NewIntCmd(ctx, "wait", 1, 500)
			return p.Process(ctx, wait)
		})
		return err == nil && wait.Val() >= 1, err
	})
}

// promote makes replica a primary, as Sentinel does in a failover.
func promote(tb testing.TB, replica *server) {
	tb.Helper()
	if err := replica.client.ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
		tb.Fatalf("REPLICAOF NO ONE: %v", err)
	}
}

// follower is a client whose connections go to whichever server is the
// primary now: a failover client without Sentinel, the test deciding when
// the primary changes.
type follower struct {
	*redis.Client
	primary atomic.Pointer[string]
}

func newFollower(tb testing.TB, primary *server) *follower {
	tb.Helper()
	f := &follower{}
	f.moveTo(primary)
	var d net.Dialer
	f.Client = redis.NewClient(&redis.Options{
		ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, *f.primary.Load())
		},
	})
	tb.Cleanup(func() { _ = f.Close() })
	return f
}

func (f *follower) moveTo(s *server) {
	addr := s.addr()
	f.primary.Store(&addr)
}
