package redismodel

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// script is a cached script: compiled once, run many times.
type script struct {
	sha   string
	flags scriptFlags
	fn    *lua.LFunction // the chunk, in the scripts' environment; it has no upvalues to share
}

// runScript is the state of the script running: Redis's scriptRunCtx.
type runScript struct {
	sha   string
	flags scriptFlags
	dirty bool // a write command has run (SCRIPT_WRITE_DIRTY)
}

// eval serves EVAL (c.Script set) or EVALSHA and returns the reply. In
// Redis's order: an EVALSHA of an unknown digest is NOSCRIPT; an EVAL of an
// unknown script has its shebang read; under OOM a shebang script without
// allow-oom or no-writes is refused before it is compiled or cached; then
// EVAL compiles and caches the script, and it runs.
func (s *Server) eval(c Call, argv []string) any {
	sha := strings.ToLower(c.SHA)
	sc := s.scripts[sha]
	if sc == nil {
		if c.Script == "" {
			return errNoScript
		}
		flags, body, err := parseShebang(c.Script)
		if err != "" {
			return err
		}
		if s.oom && flags.refusedOnOOM() {
			return errOOM
		}
		proto, cerr := compile(body)
		if cerr != nil {
			return errorReply("ERR Error compiling script (new function): " + strings.TrimSpace(cerr.Error()))
		}
		fn := s.interp.L.NewFunctionFromProto(proto)
		fn.Env = s.interp.env
		sc = &script{sha: sha, flags: flags, fn: fn}
		s.scripts[sha] = sc
	} else if s.oom && sc.flags.refusedOnOOM() {
		return errOOM
	}
	return s.runLua(sc, c.Keys, argv)
}

// runLua runs a compiled script with KEYS and ARGV and converts what it
// returns, or what it raised, to the reply.
func (s *Server) runLua(sc *script, keys, argv []string) any {
	in := s.interp
	L := in.L
	s.run = runScript{sha: sc.sha, flags: sc.flags}
	in.globals.RawSetString("KEYS", stringTable(L, keys))
	in.globals.RawSetString("ARGV", stringTable(L, argv))
	L.Push(sc.fn)
	if err := L.PCall(0, 1, in.handler); err != nil {
		if e, ok := err.(*lua.ApiError); ok {
			return s.raised(e.Object)
		}
		return errorReply("ERR " + err.Error())
	}
	ret := L.Get(-1)
	L.Pop(1)
	return fromLua(ret)
}

// raised is the error reply of a script that raised v, an error table made
// by errHandler: its message, then where it was raised, as Redis 7.0's
// luaCallFunction writes it.
func (s *Server) raised(v lua.LValue) any {
	t, ok := v.(*lua.LTable)
	if !ok { // the handler itself failed
		return errorReply("ERR " + string(luaToString(v)))
	}
	msg := ""
	switch m := t.RawGetString("err").(type) {
	case lua.LString, lua.LNumber:
		msg = lua.LVAsString(m)
	}
	source, line := t.RawGetString("source"), t.RawGetString("line")
	if source != lua.LNil && line != lua.LNil {
		msg += " script: " + s.run.sha + ", on " + lua.LVAsString(source) + ":" + lineString(line) + "."
	}
	return errorReply(msg)
}

func lineString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return strconv.FormatInt(int64(n), 10)
	}
	return lua.LVAsString(v)
}

func stringTable(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for i, v := range ss {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}
