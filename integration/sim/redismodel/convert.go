package redismodel

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The conversions between Lua values and replies of Redis 7.0 in RESP2
// (script_lua.c: luaReplyToRedisReply and redisProtocolToLuaType).

// toLua converts the reply of a command to the value redis.call returns:
// integer to number, bulk to string, null to false, array to table (a null
// element to false), status to {ok=...}, error to {err=...}.
func toLua(L *lua.LState, reply any) lua.LValue {
	switch r := reply.(type) {
	case int64:
		return lua.LNumber(r)
	case string:
		return lua.LString(r)
	case status:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(r))
		return t
	case Error:
		return errTable(L, string(r))
	case []any:
		t := L.CreateTable(len(r), 0)
		for i, e := range r {
			t.RawSetInt(i+1, toLua(L, e))
		}
		return t
	}
	return lua.LFalse
}

// fromLua converts what a script returns to its reply: number to integer
// (truncated toward zero), string to bulk, true to 1, false to null, a table
// with a string err field to an error, with a string ok field to a status,
// with a number double field to a double, and any other table to an array
// of its elements from 1 up to the first nil. Anything else (nil, a
// function) is null. A table nested deeper than Redis's Lua stack allows,
// as one that contains itself, ends in an error there.
func fromLua(v lua.LValue) any { return fromLuaAt(v, 0) }

// maxDepth is about where Redis 7.0 runs out of Lua stack.
const maxDepth = 2000

func fromLuaAt(v lua.LValue, depth int) any {
	if depth > maxDepth {
		return Error("ERR reached lua stack limit")
	}
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return luaInt(float64(v))
	case lua.LBool:
		if v {
			return int64(1)
		}
		return nil
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			return errorReply(string(e))
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return status(oneLine(string(s)))
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			return float64(d)
		}
		var out []any
		for i := 1; ; i++ {
			e := v.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			out = append(out, fromLuaAt(e, depth+1))
		}
		if out == nil {
			out = []any{}
		}
		return out
	}
	return nil
}

// luaInt is C's (long long) cast of a double as Redis's x86-64 build does
// it: truncation toward zero, and the minimum int64 for NaN and for values
// out of range.
func luaInt(f float64) int64 {
	if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

// formatDouble is C's "%.17g", which Redis uses to pass a Lua number as a
// command argument; glibc spells the infinities inf and -inf and NaN nan or
// -nan by its sign.
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	}
	return fmt.Sprintf("%.17g", f)
}
