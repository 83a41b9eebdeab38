package redismodel

import (
	"math"
	"strings"
)

func get(s *Server, args []string) any {
	e := s.lookup(args[0])
	switch {
	case e == nil:
		return nil
	case e.isHash:
		return errWrongType
	}
	return e.str
}

// setOptions are SET's options after the value.
type setOptions struct {
	nx, xx, get, keepTTL bool
	unit                 string // "ex", "px", "exat", "pxat" or ""
	expire               string
}

// parseSet parses SET's options as Redis 7.0's
// parseExtendedStringArgumentsOrReply does: NX and XX exclude each other,
// KEEPTTL and the four expiry options exclude each other (one may repeat,
// the last value wins), and anything else is a syntax error.
func parseSet(opts []string) (setOptions, Error) {
	var o setOptions
	for i := 0; i < len(opts); i++ {
		switch opt := strings.ToLower(opts[i]); {
		case opt == "nx" && !o.xx:
			o.nx = true
		case opt == "xx" && !o.nx:
			o.xx = true
		case opt == "get":
			o.get = true
		case opt == "keepttl" && o.unit == "":
			o.keepTTL = true
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") &&
			!o.keepTTL && (o.unit == "" || o.unit == opt) && i+1 < len(opts):
			o.unit, o.expire = opt, opts[i+1]
			i++
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// deadline returns the absolute deadline the options ask for, in Unix
// milliseconds, or 0 for none.
func (o setOptions) deadline(now int64) (int64, Error) {
	if o.unit == "" {
		return 0, ""
	}
	n, ok := parseInt(o.expire)
	if !ok {
		return 0, errNotInt
	}
	seconds := o.unit == "ex" || o.unit == "exat"
	if n <= 0 || (seconds && n > math.MaxInt64/1000) {
		return 0, Error("ERR invalid expire time in 'set' command")
	}
	if seconds {
		n *= 1000
	}
	if o.unit == "ex" || o.unit == "px" {
		n += now // wraps on overflow, and Redis checks for that
	}
	if n <= 0 {
		return 0, Error("ERR invalid expire time in 'set' command")
	}
	return n, ""
}

func set(s *Server, args []string) any {
	o, err := parseSet(args[2:])
	if err != "" {
		return err
	}
	when, err := o.deadline(s.now)
	if err != "" {
		return err
	}
	old := s.lookup(args[0])
	var reply any = status("OK")
	if o.get {
		if old != nil && old.isHash {
			return errWrongType
		}
		reply = nil
		if old != nil {
			reply = old.str
		}
	}
	if (o.nx && old != nil) || (o.xx && old == nil) {
		if o.get {
			return reply
		}
		return nil
	}
	e := &entry{str: args[1], expireAt: when}
	if o.keepTTL && old != nil {
		e.expireAt = old.expireAt
	}
	s.keys[args[0]] = e
	return reply
}
