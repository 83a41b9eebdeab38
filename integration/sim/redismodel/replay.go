package redismodel

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// Recording returns a Client that passes every request to c and then the
// request and its reply to fn, so that the requests of a real server can be
// replayed on a model and the other way round.
func Recording(c redisstore.Client, fn func(Call)) redisstore.Client {
	return &recording{c: c, fn: fn}
}

type recording struct {
	c  redisstore.Client
	fn func(Call)
}

func (r *recording) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := r.c.Eval(ctx, script, keys, args...)
	r.note(Call{Script: script, Keys: keys}, args, cmd)
	return cmd
}

func (r *recording) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	cmd := r.c.EvalSha(ctx, sha1, keys, args...)
	r.note(Call{SHA: sha1, Keys: keys}, args, cmd)
	return cmd
}

func (r *recording) note(c Call, args []any, cmd *redis.Cmd) {
	if c.Script != "" {
		c.SHA = scriptSHA(c.Script)
	}
	c.Keys = slices.Clone(c.Keys)
	argv, err := argStrings(args)
	if err != nil {
		c.Args = slices.Clone(args)
	} else {
		c.Args = make([]any, len(argv))
		for i, a := range argv {
			c.Args[i] = a
		}
	}
	c.Reply, c.Err = cmd.Result()
	r.fn(c)
}

// Mismatch is a call whose replay got another reply than the recorded one.
type Mismatch struct {
	Index int  // in the calls replayed
	Call  Call // as recorded
	Reply any  // what the replay got
	Err   error
}

func (m Mismatch) String() string {
	return fmt.Sprintf("call %d (%s): recorded %s, replay %s", m.Index, describe(m.Call),
		show(m.Call.Reply, m.Call.Err), show(m.Reply, m.Err))
}

// Replay sends calls to c in order and returns those whose reply differs
// from the recorded one (see Same).
func Replay(ctx context.Context, calls []Call, c redisstore.Client) []Mismatch {
	var out []Mismatch
	for i, call := range calls {
		var cmd *redis.Cmd
		if call.Script != "" {
			cmd = c.Eval(ctx, call.Script, call.Keys, call.Args...)
		} else {
			cmd = c.EvalSha(ctx, call.SHA, call.Keys, call.Args...)
		}
		reply, err := cmd.Result()
		if !Same(call.Reply, call.Err, reply, err) {
			out = append(out, Mismatch{Index: i, Call: call, Reply: reply, Err: err})
		}
	}
	return out
}

// Same reports whether two replies, as go-redis returns them, are the same
// reply of Redis. Errors are compared by their text, with two allowances
// for what the model cannot reproduce: the wording of Lua's own runtime
// errors (gopher-lua's differ from Lua 5.1's; the position and the script
// must agree) and of compile errors. Flat arrays of an even number of
// strings, as HGETALL returns, may also list their pairs in another order,
// since Redis orders the fields of a large hash by a seeded hash function.
func Same(aReply any, aErr error, bReply any, bErr error) bool {
	if aErr != nil || bErr != nil {
		return aErr != nil && bErr != nil && sameError(aErr, bErr)
	}
	return sameValue(aReply, bReply)
}

func sameError(a, b error) bool {
	var ra, rb redis.Error
	if errors.As(a, &ra) != errors.As(b, &rb) {
		return false
	}
	x, y := a.Error(), b.Error()
	if x == y {
		return true
	}
	const compiling = "ERR Error compiling script (new function): "
	if strings.HasPrefix(x, compiling) && strings.HasPrefix(y, compiling) {
		return true
	}
	mx, my := luaRuntimeError.FindStringSubmatch(x), luaRuntimeError.FindStringSubmatch(y)
	return mx != nil && my != nil && mx[1] == my[1] && mx[3] == my[3]
}

// luaRuntimeError is an error Lua raised in a script: position, message,
// then the script and line Redis adds.
var luaRuntimeError = regexp.MustCompile(`^ERR (user_script:\d+:) (.*)( script: [0-9a-f]{40}, on @user_script:\d+\.)$`)

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		inOrder := true
		for i := range x {
			if !sameValue(x[i], y[i]) {
				inOrder = false
				break
			}
		}
		return inOrder || samePairs(x, y)
	case error:
		y, ok := b.(error)
		return ok && sameError(x, y)
	}
	return a == b
}

// samePairs reports whether x and y are flat field/value lists of the same
// pairs.
func samePairs(x, y []any) bool {
	px, okx := pairs(x)
	py, oky := pairs(y)
	return okx && oky && slices.Equal(px, py)
}

func pairs(a []any) ([]string, bool) {
	if len(a)%2 != 0 {
		return nil, false
	}
	out := make([]string, 0, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		k, ok1 := a[i].(string)
		v, ok2 := a[i+1].(string)
		if !ok1 || !ok2 {
			return nil, false
		}
		out = append(out, fmt.Sprintf("%q=%q", k, v))
	}
	slices.Sort(out)
	return out, true
}

func describe(c Call) string {
	op := "EVALSHA " + c.SHA[:min(8, len(c.SHA))]
	if c.Script != "" {
		op = "EVAL " + c.SHA[:8]
	}
	return fmt.Sprintf("%s keys %q args %s", op, c.Keys, shorten(fmt.Sprintf("%q", c.Args)))
}

func show(reply any, err error) string {
	if err != nil {
		return fmt.Sprintf("error %T %q", err, err.Error())
	}
	return shorten(fmt.Sprintf("%#v", reply))
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
