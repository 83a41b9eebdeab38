package ddbmodel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// Server is an in-memory DynamoDB. It is safe for concurrent use: one
// mutex serialises the requests, in the order they take it.
type Server struct {
	mu     sync.Mutex
	tables map[string]*table
	limit  int
	record func(Call)
	// Parsed expressions by text: the same few texts come back millions
	// of times.
	conds   map[string]parsed[*condExpr]
	updates map[string]parsed[*updateExpr]
	counts  map[exprPair]usedCounts
	// arena holds the bound placeholders of the request being answered
	// (see slots); finish empties it.
	arena []slot
	// tokens are the ClientRequestTokens of the transactions that
	// succeeded, with their requests' fingerprints (see txFingerprint).
	tokens map[string]string
}

var _ dynamostore.API = (*Server)(nil)

// Call is one request the server answered: Op is the operation name
// ("UpdateItem", ...), Input the request as the caller sent it (callers
// must not change a request after sending it, as with the SDK), Output the
// response (a copy of the caller's, nil with an error) and Err the error.
type Call struct {
	Op     string
	Input  any
	Output any
	Err    error
}

// New returns a server without tables.
func New() *Server {
	return &Server{
		tables:  map[string]*table{},
		limit:   DefaultItemLimit,
		conds:   map[string]parsed[*condExpr]{},
		updates: map[string]parsed[*updateExpr]{},
		counts:  map[exprPair]usedCounts{},
		tokens:  map[string]string{},
	}
}

// table is a table: its key schema (attributes of type S; sk "" for a
// simple key) and its items by key.
type table struct {
	pk, sk string
	items  map[itemKey]item
}

type itemKey struct{ pk, sk string }

// CreateTable creates a table whose partition key (and sort key, unless
// sortKey is "") are string attributes.
func (s *Server) CreateTable(name, partitionKey, sortKey string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case name == "" || partitionKey == "":
		return errors.New("ddbmodel: CreateTable: empty table or partition key name")
	case partitionKey == sortKey:
		return fmt.Errorf("ddbmodel: CreateTable %q: partition and sort key are both %q", name, sortKey)
	case s.tables[name] != nil:
		return fmt.Errorf("ddbmodel: CreateTable %q: table exists", name)
	}
	s.tables[name] = &table{pk: partitionKey, sk: sortKey, items: map[itemKey]item{}}
	return nil
}

// SetItemLimit sets the item size limit (DefaultItemLimit, 400 KB, by
// default), so that a simulation can make an item too large cheaply.
func (s *Server) SetItemLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
}

// SetRecorder makes the server call fn with every request it answers, in
// the order it applies them, while holding its lock: fn must not call the
// server. nil stops recording.
func (s *Server) SetRecorder(fn func(Call)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = fn
}

// Items returns a copy of every item of a table, ordered by key (nil for
// an unknown table).
func (s *Server) Items(tableName string) []map[string]types.AttributeValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[tableName]
	if t == nil {
		return nil
	}
	keys := make([]itemKey, 0, len(t.items))
	for k := range t.items {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b itemKey) int {
		if c := strings.Compare(a.pk, b.pk); c != 0 {
			return c
		}
		return strings.Compare(a.sk, b.sk)
	})
	out := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		out[i] = cloneItem(t.items[k])
	}
	return out
}

// Get returns a copy of the item with key (its key attributes) in a table.
func (s *Server) Get(tableName string, key map[string]types.AttributeValue) (map[string]types.AttributeValue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[tableName]
	if t == nil {
		return nil, false
	}
	k, msg := t.key(key, false)
	if msg != "" {
		return nil, false
	}
	it, ok := t.items[k]
	return cloneItem(it), ok
}

// table returns the table a request names.
func (s *Server) table(name *string) (*table, error) {
	if name == nil {
		return nil, validation("1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null")
	}
	t := s.tables[*name]
	if t == nil {
		return nil, noTable()
	}
	return t, nil
}

// keyNames are the table's key attributes.
func (t *table) keyNames() []string {
	if t.sk == "" {
		return []string{t.pk}
	}
	return []string{t.pk, t.sk}
}

// DynamoDB's limits on key values: a partition key value up to 2048 bytes,
// a sort key value up to 1024.
const (
	maxPartitionKey = 2048
	maxSortKey      = 1024
)

// key returns the key of a request's Key (whole false: exactly the key
// attributes) or of a PutItem's Item (whole true), or DynamoDB Local's
// message for a key that does not match the schema.
func (t *table) key(m item, whole bool) (itemKey, string) {
	names := t.keyNames()
	if !whole && len(m) != len(names) {
		return itemKey{}, "The number of conditions on the keys is invalid"
	}
	var vals [2]string
	for i, name := range names {
		v, ok := m[name]
		if !ok {
			return itemKey{}, "One of the required keys was not given a value"
		}
		s, ok := v.(*types.AttributeValueMemberS)
		switch {
		case !ok:
			return itemKey{}, "One or more parameter values were invalid: Type mismatch for key"
		case s.Value == "":
			return itemKey{}, "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: " + name
		case i == 0 && len(s.Value) > maxPartitionKey, i == 1 && len(s.Value) > maxSortKey:
			return itemKey{}, "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes"
		}
		vals[i] = s.Value
	}
	return itemKey{vals[0], vals[1]}, ""
}

// keyItem is the item of the key attributes alone: what an update of an
// absent item starts from.
func (t *table) keyItem(k itemKey) item {
	m := item{t.pk: &types.AttributeValueMemberS{Value: k.pk}}
	if t.sk != "" {
		m[t.sk] = &types.AttributeValueMemberS{Value: k.sk}
	}
	return m
}

// finish records a call (recorded makes the copy of its output) and shapes
// its error; the caller holds s.mu.
func (s *Server) finish(op string, in any, err error, recorded func() any) error {
	clear(s.arena) // holds no request's values beyond the request
	s.arena = s.arena[:0]
	if s.record != nil {
		c := Call{Op: op, Input: in, Err: err}
		if err == nil {
			c.Output = recorded()
		}
		s.record(c)
	}
	if err != nil {
		return operationError(op, err)
	}
	return nil
}
