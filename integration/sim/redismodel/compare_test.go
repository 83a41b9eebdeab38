package redismodel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// probe is a request a test sends to both the real server and the model.
type probe struct {
	script string
	keys   []string
	args   []any
	sha    bool // EVALSHA of the script's digest rather than EVAL
}

// record sends probes to the real server and returns the calls and their
// replies.
func record(t *testing.T, client *redis.Client, probes []probe) []redismodel.Call {
	t.Helper()
	var calls []redismodel.Call
	rec := redismodel.Recording(client, func(c redismodel.Call) { calls = append(calls, c) })
	for _, p := range probes {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if p.sha {
			rec.EvalSha(ctx, sha(p.script), p.keys, p.args...)
		} else {
			rec.Eval(ctx, p.script, p.keys, p.args...)
		}
		cancel()
	}
	return calls
}

// replay replays calls on model and fails t for every reply that differs.
func replay(t *testing.T, calls []redismodel.Call, model *redismodel.Server) {
	t.Helper()
	ctx := context.Background()
	for _, m := range redismodel.Replay(ctx, calls, model) {
		t.Errorf("%s", m)
	}
}

// sameKeyspace fails t unless the real server and the model hold the same
// keys, values and deadlines.
func sameKeyspace(t *testing.T, client *redis.Client, model *redismodel.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys, err := client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var real []redismodel.Entry
	for _, k := range keys {
		e := redismodel.Entry{Key: k}
		if e.Type, err = client.Type(ctx, k).Result(); err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case "hash":
			e.Fields, err = client.HGetAll(ctx, k).Result()
		case "string":
			e.Value, err = client.Get(ctx, k).Result()
		}
		if err != nil {
			t.Fatal(err)
		}
		ms, err := client.Do(ctx, "PEXPIRETIME", k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		e.ExpireAt = max(ms, 0)
		real = append(real, e)
	}
	got := model.Dump()
	if len(got) != len(real) {
		t.Errorf("model has %d keys, server %d", len(got), len(real))
	}
	for i := range min(len(got), len(real)) {
		if !sameEntry(got[i], real[i]) {
			t.Errorf("key %d: model %+v, server %+v", i, short(got[i]), short(real[i]))
		}
	}
}

func sameEntry(a, b redismodel.Entry) bool {
	if a.Key != b.Key || a.Type != b.Type || a.Value != b.Value || a.ExpireAt != b.ExpireAt || len(a.Fields) != len(b.Fields) {
		return false
	}
	for k, v := range a.Fields {
		if w, ok := b.Fields[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// short abbreviates long values for messages.
func short(e redismodel.Entry) redismodel.Entry {
	f := map[string]string{}
	for k, v := range e.Fields {
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		f[k] = v
	}
	e.Fields = f
	return e
}

// replayStrict replays calls on model and fails t for every reply that
// differs, arrays in the same order: only the texts of Lua's runtime and
// compile errors may differ (see redismodel.Same).
func replayStrict(t *testing.T, calls []redismodel.Call, model *redismodel.Server) {
	t.Helper()
	ctx := context.Background()
	for i, c := range calls {
		cmd := model.EvalSha(ctx, c.SHA, c.Keys, c.Args...)
		if c.Script != "" {
			cmd = model.Eval(ctx, c.Script, c.Keys, c.Args...)
		}
		got, err := cmd.Result()
		same := redismodel.Same(c.Reply, c.Err, got, err)
		if same && c.Err == nil {
			same = canonical(c.Reply) == canonical(got)
		}
		if !same {
			t.Errorf("call %d %q: server %s, model %s", i, c.Script, canonical(errOr(c.Reply, c.Err)), canonical(errOr(got, err)))
		}
	}
}

func errOr(v any, err error) any {
	if err != nil {
		return err
	}
	return v
}

// canonical spells a reply with its types, errors of any type alike.
func canonical(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canonical(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case error:
		return fmt.Sprintf("error(%q)", x.Error())
	}
	return fmt.Sprintf("%T(%#v)", v, v)
}
