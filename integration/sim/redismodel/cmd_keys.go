package redismodel

import (
	"math"
	"strings"
)

// The key commands, with Redis 7.0's replies and error checks in
// its order. Times are the server's clock read once when the script started,
// as Redis freezes it for a script.

func del(s *Server, args []string) any {
	var n int64
	for _, key := range args {
		if s.lookup(key) != nil {
			delete(s.keys, key)
			n++
		}
	}
	return n
}

func exists(s *Server, args []string) any {
	var n int64
	for _, key := range args {
		if s.lookup(key) != nil {
			n++ // a key named twice counts twice, as in Redis
		}
	}
	return n
}

func typeCmd(s *Server, args []string) any {
	e := s.lookup(args[0])
	if e == nil {
		return status("none")
	}
	return status(e.typeName())
}

func pttl(s *Server, args []string) any {
	e := s.lookup(args[0])
	switch {
	case e == nil:
		return int64(-2)
	case e.expireAt == 0:
		return int64(-1)
	}
	return max(e.expireAt-s.now, 0)
}

func persist(s *Server, args []string) any {
	e := s.lookup(args[0])
	if e == nil || e.expireAt == 0 {
		return int64(0)
	}
	e.expireAt = 0
	return int64(1)
}

func pexpireat(s *Server, args []string) any { return s.expire("pexpireat", 0, args) }
func pexpire(s *Server, args []string) any   { return s.expire("pexpire", s.now, args) }

// expire is Redis's expireGenericCommand for milliseconds: the deadline is
// base + the argument; options NX, XX, GT, LT; a deadline at or before now
// deletes the key at once.
func (s *Server) expire(name string, base int64, args []string) any {
	var nx, xx, gt, lt bool
	for _, opt := range args[2:] {
		switch strings.ToLower(opt) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		default:
			return errorReply("ERR Unsupported option " + opt)
		}
	}
	if nx && (xx || gt || lt) {
		return Error("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if gt && lt {
		return Error("ERR GT and LT options at the same time are not compatible")
	}
	when, ok := parseInt(args[1])
	if !ok {
		return errNotInt
	}
	if when > math.MaxInt64-base {
		return errorReply("ERR invalid expire time in '" + name + "' command")
	}
	when += base
	e := s.lookup(args[0])
	if e == nil {
		return int64(0)
	}
	current := e.expireAt // 0: none, which GT treats as infinite
	if (nx && current != 0) || (xx && current == 0) ||
		(gt && (current == 0 || when <= current)) || (lt && current != 0 && when >= current) {
		return int64(0)
	}
	if when <= s.now {
		delete(s.keys, args[0])
		return int64(1)
	}
	e.expireAt = when
	return int64(1)
}
