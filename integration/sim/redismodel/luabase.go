package redismodel

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Base functions whose gopher-lua versions differ from those of Redis 7.0.

// luaError is Lua 5.1's error(): a string or number message gets the
// position of the function at level (1, the caller, by default), and
// error() raises nil. gopher-lua's own adds no position to a number and
// refuses a missing message.
func luaError(L *lua.LState) int {
	msg := L.Get(1)
	level := L.OptInt(2, 1)
	if level > 0 && (msg.Type() == lua.LTString || msg.Type() == lua.LTNumber) {
		msg = lua.LString(where(L, level) + lua.LVAsString(msg))
	}
	L.Error(msg, 0)
	return 0
}

// luaPcall is Redis 7.0's pcall (luaRedisPcall): an error table with an err
// field, as redis.call raises, is caught as its err string.
func luaPcall(L *lua.LState) int {
	L.CheckAny(1)
	if err := L.PCall(L.GetTop()-1, lua.MultRet, nil); err != nil {
		var v lua.LValue = lua.LString(err.Error())
		if e, ok := err.(*lua.ApiError); ok {
			v = e.Object
		}
		if t, ok := v.(*lua.LTable); ok {
			if msg := t.RawGetString("err"); msg.Type() == lua.LTString || msg.Type() == lua.LTNumber {
				v = msg
			}
		}
		L.Push(lua.LFalse)
		L.Push(v)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// tonumber is Lua 5.1's tonumber: in base 10 a string converts as C's
// strtod reads it (spaces around, exponents, hexadecimal, inf and nan),
// where gopher-lua's takes integers and dotted decimals only. Other bases
// go to gopher-lua's, which follows Lua there.
func tonumber(gopher lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		s, isString := L.CheckAny(1).(lua.LString)
		if !isString || L.OptInt(2, 10) != 10 {
			return gopher(L)
		}
		if f, ok := str2d(string(s)); ok {
			L.Push(lua.LNumber(f))
		} else {
			L.Push(lua.LNil)
		}
		return 1
	}
}

// cSpace is what C's isspace accepts.
const cSpace = " \t\n\v\f\r"

// str2d is Lua 5.1's luaO_str2d on glibc.
func str2d(s string) (float64, bool) {
	t := strings.Trim(s, cSpace)
	if t == "" || strings.Contains(t, "_") { // Go takes underscores in some numbers, C never
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err == nil || isRangeErr(err) {
		return f, true
	}
	digits := strings.TrimLeft(t, "+-")
	if len(digits) > 2 && (digits[:2] == "0x" || digits[:2] == "0X") && !strings.ContainsAny(digits, "pP") {
		// strtod reads a hexadecimal number without an exponent; Go wants one.
		f, err = strconv.ParseFloat(t+"p0", 64)
		return f, err == nil || isRangeErr(err)
	}
	return 0, false
}

func isRangeErr(err error) bool {
	e, ok := err.(*strconv.NumError)
	return ok && e.Err == strconv.ErrRange
}
