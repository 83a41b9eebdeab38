package redismodel

import (
	"fmt"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// chunkName is what Redis 7.0 names an EVAL script's chunk ("@user_script"),
// without the @, which Lua drops from positions in messages.
const chunkName = "user_script"

// interp is the Lua interpreter of a Server: one state for all scripts, as
// Redis has, used under the Server's mutex.
type interp struct {
	L       *lua.LState
	globals *lua.LTable    // what scripts read through env; KEYS and ARGV are set here
	env     *lua.LTable    // scripts' environment: reads globals, refuses writes
	handler *lua.LFunction // Redis's __redis__err__handler
}

// The globals Redis 7.0 gives scripts that the model has too: Lua 5.1's
// base functions but those that load code or touch the process, and the
// string, table, math and redis libraries. Not modelled: bit, cjson,
// cmsgpack, struct, coroutine, collectgarbage, gcinfo, load, loadstring.
var baseGlobals = []string{"assert", "getmetatable", "ipairs", "next", "pairs", "rawequal",
	"rawget", "rawset", "select", "setmetatable", "tostring", "type", "unpack", "xpcall"}

func newInterp(s *Server) *interp {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	loaded := L.G.Global
	g := L.NewTable()
	for _, name := range baseGlobals {
		g.RawSetString(name, loaded.RawGetString(name))
	}
	g.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	g.RawSetString("error", L.NewFunction(luaError))
	g.RawSetString("pcall", L.NewFunction(luaPcall))
	g.RawSetString("tonumber", L.NewFunction(tonumber(loaded.RawGetString("tonumber").(*lua.LFunction).GFunction)))
	math := loaded.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(s.rand.luaRandom))
	math.RawSetString("randomseed", L.NewFunction(s.rand.luaSeed))
	for _, lib := range []string{"string", "table", "math"} {
		g.RawSetString(lib, readOnly(L, loaded.RawGetString(lib).(*lua.LTable)))
	}
	g.RawSetString("redis", readOnly(L, redisLib(L, s)))
	// Redis 7.0 makes the globals read-only and reading one that does not
	// exist an error.
	L.SetMetatable(g, metatable(L, "__index", func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckString(2))
		return 0
	}))
	env := readOnly(L, g)
	g.RawSetString("_G", env)
	return &interp{L: L, globals: g, env: env, handler: L.NewFunction(errHandler)}
}

// readOnly returns an empty table that reads t and refuses every write, as
// Redis 7.0's read-only tables do.
func readOnly(L *lua.LState, t *lua.LTable) *lua.LTable {
	mt := metatable(L, "__newindex", func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
	mt.RawSetString("__index", t)
	proxy := L.NewTable()
	L.SetMetatable(proxy, mt)
	return proxy
}

func metatable(L *lua.LState, event string, fn lua.LGFunction) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString(event, L.NewFunction(fn))
	return mt
}

// compiled holds every body compiled so far, in every Server: a
// FunctionProto is read-only once built and may be shared by Lua states
// (gopher-lua's documentation), and a simulation makes a server per
// schedule.
var compiled sync.Map // body → compileResult

type compileResult struct {
	proto *lua.FunctionProto
	err   error
}

// compile compiles a script's body as a chunk named as Redis names it.
func compile(body string) (*lua.FunctionProto, error) {
	if r, ok := compiled.Load(body); ok {
		return r.(compileResult).proto, r.(compileResult).err
	}
	proto, err := compileNew(body)
	compiled.Store(body, compileResult{proto, err})
	return proto, err
}

func compileNew(body string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(body), chunkName)
	if err != nil {
		return nil, err
	}
	proto, err := lua.Compile(chunk, chunkName)
	if err != nil {
		return nil, err
	}
	// gopher-lua builds Lua 5.0's arg table for a chunk at every call,
	// though no name refers to it (Lua 5.1 has none for a chunk): most of
	// what a run would allocate.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return proto, nil
}

// where is Lua's luaL_where: "chunk:line: " for a Lua function at level, ""
// for a Go one.
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
}

// errHandler is Redis 7.0's __redis__err__handler: it turns what the script
// raised into an error table {err=...} ("ERR " and the value, unless it was
// a table already, as redis.call raises) and records the line that raised
// it: the function at level 1, or at level 2 if level 1 is a Go function
// (error, redis.call).
func errHandler(L *lua.LState) int {
	v := L.Get(1)
	t, ok := v.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", "ERR "+luaToString(v))
	}
	for level := 1; level <= 2; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What != "G" {
			t.RawSetString("source", lua.LString("@"+dbg.Source))
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
			break
		}
	}
	L.Push(t)
	return 1
}

// luaToString is tostring() for the values a script may raise.
func luaToString(v lua.LValue) lua.LString {
	if s, ok := v.(lua.LString); ok {
		return s
	}
	return lua.LString(v.String())
}
