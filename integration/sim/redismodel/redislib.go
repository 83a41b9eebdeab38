package redismodel

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// redisLib builds the redis table of Redis 7.0 that the model has: call,
// pcall, error_reply, status_reply, sha1hex, log (which logs nothing) and
// the version and log-level constants. Not modelled: setresp (RESP3),
// set_repl, replicate_commands, breakpoint, debug, acl_check_cmd.
func redisLib(L *lua.LState, s *Server) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"call":         func(L *lua.LState) int { return s.luaCall(L, true) },
		"pcall":        func(L *lua.LState) int { return s.luaCall(L, false) },
		"error_reply":  errorReplyFn,
		"status_reply": statusReplyFn,
		"sha1hex":      sha1hexFn,
		"log":          func(*lua.LState) int { return 0 },
	})
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(0x07000f))
	for i, name := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		t.RawSetString(name, lua.LNumber(i))
	}
	return t
}

// luaCall is redis.call (raise) and redis.pcall: it runs the command and
// returns its reply; an error reply is raised by redis.call and returned as
// {err=...} by redis.pcall, as are the errors of the call itself.
func (s *Server) luaCall(L *lua.LState, raise bool) int {
	var reply any
	if argv, err := luaArgv(L); err != "" {
		reply = err
	} else {
		reply = s.call(argv)
	}
	v := toLua(L, reply)
	if _, failed := reply.(Error); failed && raise {
		L.Error(v, 0)
	}
	L.Push(v)
	return 1
}

// luaArgv returns the arguments of redis.call as Redis passes them to the
// command: strings as they are and numbers as "%.17g".
func luaArgv(L *lua.LState) ([]string, Error) {
	n := L.GetTop()
	if n == 0 {
		return nil, Error("ERR Please specify at least one argument for this redis lib call")
	}
	argv := make([]string, n)
	for i := range argv {
		switch v := L.Get(i + 1).(type) {
		case lua.LString:
			argv[i] = string(v)
		case lua.LNumber:
			argv[i] = formatDouble(float64(v))
		default:
			return nil, Error("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	return argv, ""
}

// errorReplyFn is redis.error_reply(msg): {err=msg}, where msg gets the
// code ERR unless it has one, as Redis 7.0's luaPushErrorBuff reads it.
func errorReplyFn(L *lua.LState) int {
	msg, ok := oneString(L)
	if !ok {
		return 1
	}
	raw := strings.TrimPrefix(msg, "-")
	code, text, found := strings.Cut(raw, " ")
	if !found {
		code, text = "ERR", raw
	}
	L.Push(errTable(L, code+" "+strings.Trim(text, "\r\n")))
	return 1
}

// statusReplyFn is redis.status_reply(msg): {ok=msg}.
func statusReplyFn(L *lua.LState) int {
	msg, ok := oneString(L)
	if !ok {
		return 1
	}
	L.Push(toLua(L, status(msg)))
	return 1
}

// oneString returns the one string argument of error_reply and
// status_reply, or pushes the error table Redis returns instead.
func oneString(L *lua.LState) (string, bool) {
	if s, ok := L.Get(1).(lua.LString); ok && L.GetTop() == 1 {
		return string(s), true
	}
	L.Push(errTable(L, "ERR wrong number or type of arguments"))
	return "", false
}

func sha1hexFn(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.Error(errTable(L, "ERR wrong number of arguments"), 0)
	}
	sum := sha1.Sum([]byte(lua.LVAsString(L.Get(1))))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

func errTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(msg))
	return t
}
