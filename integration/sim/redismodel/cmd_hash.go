package redismodel

import (
	"math"
	"strconv"
)

// The hash commands, with Redis 7.0's replies and error checks in its order.

func hget(s *Server, args []string) any {
	e, err := s.lookupHash(args[0])
	if err != "" {
		return err
	}
	if e != nil {
		if v, ok := e.get(args[1]); ok {
			return v
		}
	}
	return nil
}

func hmget(s *Server, args []string) any {
	e, err := s.lookupHash(args[0])
	if err != "" {
		return err
	}
	out := make([]any, len(args)-1)
	for i, name := range args[1:] {
		if e != nil {
			if v, ok := e.get(name); ok {
				out[i] = v
			}
		}
	}
	return out
}

func hgetall(s *Server, args []string) any {
	e, err := s.lookupHash(args[0])
	if err != "" {
		return err
	}
	out := []any{}
	if e != nil {
		for _, f := range e.hash {
			out = append(out, f.name, f.value)
		}
	}
	return out
}

func hexists(s *Server, args []string) any {
	e, err := s.lookupHash(args[0])
	if err != "" {
		return err
	}
	if e != nil && e.index(args[1]) >= 0 {
		return int64(1)
	}
	return int64(0)
}

func hlen(s *Server, args []string) any {
	e, err := s.lookupHash(args[0])
	if err != "" {
		return err
	}
	if e == nil {
		return int64(0)
	}
	return int64(len(e.hash))
}

// hashForWrite returns the hash of key, created empty if absent: the caller
// must leave at least one field in a new hash.
func (s *Server) hashForWrite(key string) (*entry, Error) {
	e, err := s.lookupHash(key)
	if err != "" || e != nil {
		return e, err
	}
	e = &entry{isHash: true}
	s.keys[key] = e
	return e, ""
}

func hset(s *Server, args []string) any {
	if len(args)%2 == 0 {
		return Error("ERR wrong number of arguments for 'hset' command")
	}
	e, err := s.hashForWrite(args[0])
	if err != "" {
		return err
	}
	var created int64
	for i := 1; i < len(args); i += 2 {
		if e.set(args[i], args[i+1]) {
			created++
		}
	}
	return created
}

func hincrby(s *Server, args []string) any {
	incr, ok := parseInt(args[2])
	if !ok {
		return errNotInt
	}
	e, err := s.hashForWrite(args[0])
	if err != "" {
		return err
	}
	var old int64
	if v, found := e.get(args[1]); found {
		if old, ok = parseInt(v); !ok {
			return Error("ERR hash value is not an integer")
		}
	}
	if (incr < 0 && old < 0 && incr < math.MinInt64-old) || (incr > 0 && old > 0 && incr > math.MaxInt64-old) {
		return Error("ERR increment or decrement would overflow")
	}
	e.set(args[1], strconv.FormatInt(old+incr, 10))
	return old + incr
}

func hdel(s *Server, args []string) any {
	e, err := s.lookupHash(args[0])
	if err != "" {
		return err
	}
	if e == nil {
		return int64(0)
	}
	var deleted int64
	for _, name := range args[1:] {
		if e.del(name) {
			deleted++
		}
	}
	if len(e.hash) == 0 { // Redis deletes a hash with its last field
		delete(s.keys, args[0])
	}
	return deleted
}

// parseInt parses s as Redis's string2ll does: decimal, an optional minus,
// no plus sign, no spaces, no leading zeros, no "-0", within int64.
func parseInt(s string) (int64, bool) {
	if s == "0" {
		return 0, true
	}
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	for i := 1; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
