package redismodel

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// A reply, as the server builds it before RESP2 encoding, is one of:
//
//	int64    integer reply
//	float64  double reply (a script's {double=...})
//	string   bulk string
//	nil      null bulk string
//	status   status (simple string) reply
//	Error    error reply
//	[]any    array of replies
type status string

// Error is an error reply. Like go-redis's own it satisfies [redis.Error],
// so that redis.HasErrorPrefix and the Store's classification of errors see
// it as a reply of the server.
type Error string

func (e Error) Error() string { return string(e) }

// RedisError marks Error as a reply of the server (see [redis.Error]).
func (Error) RedisError() {}

var _ redis.Error = Error("")

// The error replies the model gives in more than one place, in Redis's words.
const (
	errOOM       = Error("OOM command not allowed when used memory > 'maxmemory'.")
	errNoScript  = Error("NOSCRIPT No matching script. Please use EVAL.")
	errWrongType = Error("WRONGTYPE Operation against a key holding the wrong kind of value")
	errNotInt    = Error("ERR value is not an integer or out of range")
	errSyntax    = Error("ERR syntax error")
)

// errorReply makes an error reply of msg as Redis sends one: a line of the
// protocol, so carriage returns and newlines become spaces.
func errorReply(msg string) Error {
	return Error(oneLine(msg))
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// clientValue returns reply as go-redis v9 hands it to a caller of Eval on
// a connection of its default protocol, RESP3 (the script's own side stays
// RESP2 unless it calls redis.setresp): integers as int64, doubles as
// float64 (a RESP2 connection would get them as strings), bulk and status
// strings as string, arrays as []any with nil for a null element, a null
// reply at the top as redis.Nil and an error reply as an error.
func clientValue(reply any) (any, error) {
	switch r := reply.(type) {
	case nil:
		return nil, redis.Nil
	case Error:
		return nil, r
	case []any:
		if err := typedError(r); err != nil {
			return nil, err
		}
		return clientArray(r), nil
	}
	return clientElem(reply), nil
}

func clientArray(a []any) []any {
	out := make([]any, len(a))
	for i, e := range a {
		out[i] = clientElem(e)
	}
	return out
}

func clientElem(reply any) any {
	switch r := reply.(type) {
	case status:
		return string(r)
	case []any:
		return clientArray(r)
	}
	return reply // int64, float64, string, nil, Error
}

// typedError returns the first error nested in a that go-redis v9 reads as
// one of its typed errors rather than as a RedisError value: its reader then
// fails the whole reply with that error (and drops the connection, whose
// unread rest of the array it cannot use).
func typedError(a []any) error {
	for _, e := range a {
		switch r := e.(type) {
		case Error:
			if isTyped(string(r)) {
				return r
			}
		case []any:
			if err := typedError(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// isTyped mirrors the prefixes of go-redis v9.22's parseTypedRedisError.
func isTyped(msg string) bool {
	for _, p := range []string{"LOADING ", "READONLY ", "MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN ",
		"MASTERDOWN ", "NOREPLICAS ", "NOAUTH ", "WRONGPASS ", "NOPERM ", "EXECABORT ", "OOM "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return msg == "ERR max number of clients reached" || strings.Contains(msg, "unauthenticated")
}
