package idem

import (
	"container/list"
	"slices"
	"sync"
	"time"
)

// lru is a bounded map from storage keys to entries that expire, the least
// recently used dropped first: the receipts a Guard has seen (WithCache).
// Dropping one costs a store request, never a second effect. (The receipts
// a Guard owes are never dropped for room: owed.go.)
type lru[E expiring] struct {
	mu    sync.Mutex
	size  int
	order *list.List // front: most recently used; values are *lruItem[E]
	items map[string]*list.Element
}

// expiring is an entry of an lru: it is dropped once now reaches expires().
type expiring interface{ expires() time.Time }

type lruItem[E expiring] struct {
	key   string
	entry E
}

func newLRU[E expiring](size int) *lru[E] {
	return &lru[E]{size: size, order: list.New(), items: make(map[string]*list.Element, size)}
}

func (c *lru[E]) get(key string, now time.Time) (E, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero E
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	it := el.Value.(*lruItem[E])
	if !now.Before(it.entry.expires()) {
		c.order.Remove(el)
		delete(c.items, key)
		return zero, false
	}
	c.order.MoveToFront(el)
	return it.entry, true
}

func (c *lru[E]) put(key string, e E) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*lruItem[E]).entry = e
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&lruItem[E]{key: key, entry: e})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruItem[E]).key)
	}
}

// cacheEntry is a receipt the Guard has seen (WithCache). It only ever
// holds receipts, so a hit can only turn a store round trip into the same
// Duplicate answer. Its result is the Guard's own copy: callers get copies.
type cacheEntry struct {
	fingerprint string
	result      []byte
	omitted     bool
	// resolved: an operator wrote the receipt (Record.Resolved).
	resolved  bool
	attempts  int
	expiresAt time.Time
}

func (e cacheEntry) expires() time.Time { return e.expiresAt }

// rememberReceipt caches a receipt read from the store, which may be an
// operator's (Resolved), as remember caches the Guard's own.
func (g *Guard) rememberReceipt(skey string, rec Record) {
	if g.cache != nil {
		g.cache.put(skey, cacheEntry{fingerprint: rec.Fingerprint, result: slices.Clone(rec.Result), omitted: rec.ResultOmitted,
			resolved: rec.Resolved, attempts: rec.Attempts, expiresAt: rec.ExpiresAt})
	}
}
