package redismodel

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// rand48 is Redis's own PRNG behind math.random (rand.c, the rand48
// algorithm), so that scripts draw the numbers a real server draws: one
// sequence per server from its start, which math.randomseed resets.
// gopher-lua's math.random would draw from Go's, differently every run.
type rand48 struct{ x uint64 }

const (
	rand48Mask = 1<<48 - 1
	rand48Max  = math.MaxInt32 // REDIS_LRAND48_MAX
)

// newRand48 is the state before any seed: lrand48's default, which Redis
// keeps.
func newRand48() rand48 { return rand48{x: 0x1234ABCD330E} }

// next returns the next 31-bit number (redisLrand48).
func (r *rand48) next() int64 {
	r.x = (0x5DEECE66D*r.x + 0xB) & rand48Mask
	return int64(r.x >> 17)
}

// luaRandom is Redis's math.random: 0 to 1, 1 to m, or m to n.
func (r *rand48) luaRandom(L *lua.LState) int {
	f := float64(r.next()%rand48Max) / rand48Max
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(f))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.RaiseError("bad argument #1 to 'random' (interval is empty)")
		}
		L.Push(lua.LNumber(math.Floor(f*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.RaiseError("bad argument #2 to 'random' (interval is empty)")
		}
		L.Push(lua.LNumber(math.Floor(f*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

// luaSeed is math.randomseed (redisSrand48).
func (r *rand48) luaSeed(L *lua.LState) int {
	seed := uint64(uint32(L.CheckInt(1)))
	r.x = seed<<16 | 0x330E
	return 0
}
