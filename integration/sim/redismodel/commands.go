package redismodel

import "strings"

// command is a Redis command as a script calls it: its arity (Redis's
// convention: n exactly n arguments counting the name, -n at least n), the
// flags of Redis 7's command table that decide whether a script may call
// it, and its implementation, which gets the arguments after the name and
// the key (args[0] is the key for every command that has one).
type command struct {
	name    string
	arity   int
	write   bool // CMD_WRITE: marks the script dirty; refused in a no-writes script
	denyOOM bool // CMD_DENYOOM: refused under OOM until the script has written
	run     func(s *Server, args []string) any
}

var commands = map[string]*command{}

func init() {
	for _, c := range []*command{
		{name: "hget", arity: 3, run: hget},
		{name: "hmget", arity: -3, run: hmget},
		{name: "hgetall", arity: 2, run: hgetall},
		{name: "hexists", arity: 3, run: hexists},
		{name: "hlen", arity: 2, run: hlen},
		{name: "hset", arity: -4, write: true, denyOOM: true, run: hset},
		{name: "hincrby", arity: 4, write: true, denyOOM: true, run: hincrby},
		{name: "hdel", arity: -3, write: true, run: hdel},
		{name: "get", arity: 2, run: get},
		{name: "set", arity: -3, write: true, denyOOM: true, run: set},
		{name: "del", arity: -2, write: true, run: del},
		{name: "exists", arity: -2, run: exists},
		{name: "pexpireat", arity: -3, write: true, run: pexpireat},
		{name: "pexpire", arity: -3, write: true, run: pexpire},
		{name: "persist", arity: 2, write: true, run: persist},
		{name: "pttl", arity: 2, run: pttl},
		{name: "type", arity: 2, run: typeCmd},
		{name: "info", arity: -1, run: info},
	} {
		commands[c.name] = c
	}
}

func (c *command) arityOK(argc int) bool {
	if c.arity > 0 {
		return argc == c.arity
	}
	return argc >= -c.arity
}

// call runs argv (name first) from the running script, with the checks of
// Redis 7.0's scriptCall in its order: known command, arity, no-writes,
// OOM. A write command that passes them marks the script dirty before it
// runs, even if it then fails (WRONGTYPE, a bad integer) or changes nothing:
// from then on Redis cannot refuse the script's writes for OOM, since it
// cannot undo what the script did.
func (s *Server) call(argv []string) any {
	c := commands[strings.ToLower(argv[0])]
	switch {
	case c == nil:
		return Error("ERR Unknown Redis command called from script")
	case !c.arityOK(len(argv)):
		return Error("ERR Wrong number of args calling Redis command from script")
	case c.write && s.run.flags.noWrites:
		return Error("ERR Write commands are not allowed from read-only scripts.")
	case c.denyOOM && s.oom && !s.run.flags.allowOOM && !s.run.dirty:
		return errOOM
	}
	if c.write {
		s.run.dirty = true
	}
	return c.run(s, argv[1:])
}
