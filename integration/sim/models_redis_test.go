//go:build integration

package sim

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// TestModelAgreesWithRedis runs Redis schedules of the simulator, recording
// what each sent to the model, and replays every schedule against a real
// redis-server: each request meets its fault (refused: never sent; reply
// lost: sent, its reply dropped), the server is out of memory exactly when
// the model was (maxmemory 1 with noeviction), a key the model had let
// expire by the request's virtual time is expired on the server too, and
// every reply that reached its caller, then every key at the end, must be
// what the model said.
//
// The simulation's clock starts in 2000 (synctest's), and the server
// expires keys by its own clock: every time the scripts are given (Unix
// milliseconds) is shifted into the future on the way to the server and
// back on the way out.
func TestModelAgreesWithRedis(t *testing.T) {
	client := startRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	recs := recordSchedules(t, "redis", *redisSchedules)
	start := time.Now()
	requests, disagree := 0, 0
	var failures []string
	for _, rec := range recs {
		n, bad := replayRedis(ctx, t, client, rec)
		requests += n
		if len(bad) > 0 {
			disagree++
			failures = append(failures, fmt.Sprintf("seed %d:\n\t%s", rec.Cfg.Seed, strings.Join(bad, "\n\t")))
		}
	}
	t.Logf("redis-server: %d schedules, %d requests replayed in %s; %d schedules disagree",
		len(recs), requests, time.Since(start).Round(time.Millisecond), disagree)
	if len(failures) > 0 {
		t.Fatalf("the model and redis-server disagree:\n%s", strings.Join(failures[:min(5, len(failures))], "\n"))
	}
}

// epoch2000 is where synctest's clock starts, in Unix milliseconds; the
// simulation's times lie within a day of it.
const epoch2000 = 946684800000

// timeShift moves the simulation's times into the server's future.
var timeShift = (time.Now().UnixMilli()-epoch2000)/86400000*86400000 + 86400000

func isSimTime(n int64) bool { return n >= epoch2000 && n < epoch2000+2*86400000 }

// shifted is a request's arguments with their times moved: numbers, and
// strings of digits (resolveLua's old updatedAt, as read).
func shifted(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int64:
			if isSimTime(v) {
				a = v + timeShift
			}
		case string:
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && isSimTime(n) {
				a = strconv.FormatInt(n+timeShift, 10)
			}
		}
		out[i] = a
	}
	return out
}

// unshifted is a reply with its times brought back to the simulation's.
func unshifted(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = unshifted(e)
		}
		return out
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && isSimTime(n-timeShift) {
			return strconv.FormatInt(n-timeShift, 10)
		}
	case int64:
		if isSimTime(v - timeShift) {
			return v - timeShift
		}
	}
	return v
}

func replayRedis(ctx context.Context, t *testing.T, c *redis.Client, rec *Recording) (int, []string) {
	var bad []string
	for _, cmd := range [][]any{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}, {"CONFIG", "SET", "maxmemory-policy", "noeviction"}, {"CONFIG", "SET", "maxmemory", "0"}} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	oom := false
	for i, wc := range rec.Calls {
		call := wc.Redis
		if wc.Refused() {
			continue // never reached the server
		}
		key := call.Keys[0]
		if !wc.Existed {
			// Expired by the simulation's clock at this request: so on the server.
			c.Del(ctx, key)
		}
		if wc.OOM != oom {
			limit := "0"
			if wc.OOM {
				limit = "1"
			}
			if err := c.ConfigSet(ctx, "maxmemory", limit).Err(); err != nil {
				t.Fatal(err)
			}
			oom = wc.OOM
		}
		var r *redis.Cmd
		if call.Script != "" {
			r = c.Eval(ctx, call.Script, call.Keys, shifted(call.Args)...)
		} else {
			r = c.EvalSha(ctx, call.SHA, call.Keys, shifted(call.Args)...)
		}
		got, err := r.Result()
		if wc.Lost() {
			continue // applied; its caller never saw the reply
		}
		if !redismodel.Same(call.Reply, call.Err, unshifted(got), err) {
			bad = append(bad, fmt.Sprintf("call %d %s on %s: model %v %v, redis-server %v %v",
				i, scriptName(call), key, call.Reply, call.Err, unshifted(got), err))
		}
	}
	if oom {
		_ = c.ConfigSet(ctx, "maxmemory", "0").Err()
	}
	return len(rec.Calls), append(bad, compareKeys(ctx, c, rec)...)
}

// compareKeys compares the model's keyspace at the end with the server's,
// leaving out what the model had let expire by then.
func compareKeys(ctx context.Context, c *redis.Client, rec *Recording) []string {
	var bad []string
	live := map[string]bool{}
	for _, e := range rec.Keys {
		live[e.Key] = true
		got, err := c.HGetAll(ctx, e.Key).Result()
		if err != nil {
			return append(bad, err.Error())
		}
		for f, v := range got {
			got[f] = unshifted(v).(string)
		}
		if fmt.Sprint(got) != fmt.Sprint(e.Fields) {
			bad = append(bad, fmt.Sprintf("key %s at the end: model %v, redis-server %v", e.Key, e.Fields, got))
		}
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		return append(bad, err.Error())
	}
	end := epoch2000 + rec.End.Milliseconds()
	for _, k := range keys {
		if live[k] {
			continue
		}
		// The model let it expire by the end: so would the server have.
		if at, err := c.Do(ctx, "PEXPIRETIME", k).Int64(); err == nil && at > 0 && at-timeShift <= end {
			continue
		}
		bad = append(bad, fmt.Sprintf("key %s at the end: on redis-server, not in the model", k))
	}
	return bad
}

func scriptName(c *redismodel.Call) string {
	if c.Script == "" {
		return "EVALSHA " + c.SHA[:8]
	}
	return "EVAL " + c.SHA[:8]
}

// startRedis starts a redis-server of the test's own on 127.0.0.1 and a
// free port, killed by PID when the test ends.
func startRedis(t *testing.T) *redis.Client {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH (integration/scripts/redis.sh install): %v", err)
	}
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
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	client := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for client.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not answer PING within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return client
}
