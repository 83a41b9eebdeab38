package redismodel

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

var _ redisstore.Client = (*Server)(nil)

// Server is an in-memory Redis 7.0 server that runs Lua scripts. It is safe
// for concurrent use; requests run one at a time, as on Redis.
type Server struct {
	mu      sync.Mutex
	clock   func() time.Time
	keys    map[string]*entry
	scripts map[string]*script // by SHA-1
	interp  *interp
	rand    rand48
	oom     bool
	policy  string
	aof     bool
	record  func(Call)

	now int64     // the clock when the running request started, in Unix milliseconds
	run runScript // the script running
}

// New returns an empty server whose clock, read once per request, expires
// keys.
func New(clock func() time.Time) *Server {
	s := &Server{
		clock:   clock,
		keys:    map[string]*entry{},
		scripts: map[string]*script{},
		rand:    newRand48(),
		policy:  "noeviction",
	}
	s.interp = newInterp(s)
	return s
}

// SetOOM sets whether used memory is above maxmemory, with the policy
// noeviction: scripts are refused or their first denyoom write fails (see
// the package documentation). The model counts no memory; this is the
// switch.
func (s *Server) SetOOM(oom bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oom = oom
}

// SetMaxmemoryPolicy sets the maxmemory-policy INFO reports (default
// noeviction). The model evicts nothing whatever the policy.
func (s *Server) SetMaxmemoryPolicy(policy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = policy
}

// SetAOF sets whether INFO reports AOF as enabled.
func (s *Server) SetAOF(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aof = on
}

// FlushScripts empties the script cache, as SCRIPT FLUSH or a restart does:
// the next EVALSHA of every script is NOSCRIPT.
func (s *Server) FlushScripts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.scripts)
}

// Call is a request to the server and its reply, as go-redis returned it.
type Call struct {
	SHA    string   // the script's SHA-1; for EVAL, that of Script
	Script string   // the script's text for EVAL; "" for EVALSHA
	Keys   []string // KEYS
	Args   []any    // ARGV, as the strings sent
	Reply  any      // the value: int64, string, []any...
	Err    error    // the error: redis.Nil, an error reply...
}

// SetRecorder makes the server pass every request and its reply to fn, in
// the order it serves them, while it holds its lock; nil stops recording.
func (s *Server) SetRecorder(fn func(Call)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = fn
}

// Eval implements redisstore.Client: EVAL, which caches the script.
func (s *Server) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.request(ctx, Call{SHA: scriptSHA(script), Script: script, Keys: keys}, args)
}

// scriptSHA is the digest under which Redis caches a script: the SHA-1 of
// its whole text, shebang included.
func scriptSHA(script string) string {
	sum := sha1.Sum([]byte(script))
	return hex.EncodeToString(sum[:])
}

// EvalSha implements redisstore.Client: EVALSHA of a cached script.
func (s *Server) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.request(ctx, Call{SHA: sha1, Keys: keys}, args)
}

// request serves one EVAL or EVALSHA. The context is not consulted: a
// request that reached a server runs whatever became of its caller.
func (s *Server) request(ctx context.Context, c Call, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, cmdArgs(c, args)...)
	argv, err := argStrings(args)
	if err != nil { // go-redis fails such a command before sending it
		cmd.SetErr(err)
		return cmd
	}
	c.Keys = slices.Clone(c.Keys)
	c.Args = make([]any, len(argv))
	for i, a := range argv {
		c.Args[i] = a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.clock().UnixMilli()
	c.Reply, c.Err = clientValue(s.eval(c, argv))
	if s.record != nil {
		s.record(c)
	}
	cmd.SetVal(c.Reply)
	cmd.SetErr(c.Err)
	return cmd
}

// cmdArgs are the arguments of the command go-redis would send, for the
// Cmd's String.
func cmdArgs(c Call, args []any) []any {
	out := []any{"evalsha", c.SHA}
	if c.Script != "" {
		out = []any{"eval", c.Script}
	}
	out = append(out, len(c.Keys))
	for _, k := range c.Keys {
		out = append(out, k)
	}
	return append(out, args...)
}
