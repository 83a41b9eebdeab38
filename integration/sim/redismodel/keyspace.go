package redismodel

import (
	"maps"
	"slices"
)

// entry is the value of a key: a string or a hash, and its deadline.
type entry struct {
	isHash   bool
	str      string
	hash     []field // insertion order, as Redis's listpack keeps a small hash; never empty
	expireAt int64   // Unix milliseconds; 0 for no TTL
}

type field struct{ name, value string }

func (e *entry) typeName() string {
	if e.isHash {
		return "hash"
	}
	return "string"
}

// index returns the position of name in the hash, or -1. Records have about
// ten fields, so a scan beats a map.
func (e *entry) index(name string) int {
	for i, f := range e.hash {
		if f.name == name {
			return i
		}
	}
	return -1
}

func (e *entry) get(name string) (string, bool) {
	if i := e.index(name); i >= 0 {
		return e.hash[i].value, true
	}
	return "", false
}

// set sets a field and reports whether it is new. A new field goes last and
// an existing one keeps its place, so HGETALL lists fields as Redis lists a
// small hash.
func (e *entry) set(name, value string) bool {
	if i := e.index(name); i >= 0 {
		e.hash[i].value = value
		return false
	}
	e.hash = append(e.hash, field{name, value})
	return true
}

func (e *entry) del(name string) bool {
	i := e.index(name)
	if i < 0 {
		return false
	}
	e.hash = slices.Delete(e.hash, i, i+1)
	return true
}

// lookup returns the live entry of key, or nil. An entry whose deadline has
// passed is deleted as it is found, as Redis expires keys lazily: Redis
// counts a key expired once its deadline is strictly before now.
func (s *Server) lookup(key string) *entry {
	e, ok := s.keys[key]
	if !ok {
		return nil
	}
	if e.expireAt != 0 && e.expireAt < s.now {
		delete(s.keys, key)
		return nil
	}
	return e
}

// lookupHash returns the hash of key, nil if absent, or WRONGTYPE.
func (s *Server) lookupHash(key string) (*entry, Error) {
	e := s.lookup(key)
	if e != nil && !e.isHash {
		return nil, errWrongType
	}
	return e, ""
}

// Entry is a key of the model's keyspace, as Dump returns it.
type Entry struct {
	Key      string
	Type     string            // "string" or "hash"
	Value    string            // a string's value
	Fields   map[string]string // a hash's fields
	ExpireAt int64             // Unix milliseconds; 0 for no TTL
}

// Dump returns every key live at the server's clock, sorted by key.
func (s *Server) Dump() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.clock().UnixMilli()
	var out []Entry
	for _, key := range slices.Sorted(maps.Keys(s.keys)) {
		e := s.lookup(key)
		if e == nil {
			continue
		}
		d := Entry{Key: key, Type: e.typeName(), Value: e.str, ExpireAt: e.expireAt}
		if e.isHash {
			d.Fields = fieldMap(e.hash)
		}
		out = append(out, d)
	}
	return out
}

// Hash returns the fields of the hash stored at key, live at the server's
// clock, and whether there is one.
func (s *Server) Hash(key string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.clock().UnixMilli()
	e := s.lookup(key)
	if e == nil || !e.isHash {
		return nil, false
	}
	return fieldMap(e.hash), true
}

func fieldMap(fs []field) map[string]string {
	m := make(map[string]string, len(fs))
	for _, f := range fs {
		m[f.name] = f.value
	}
	return m
}
