package idem

import (
	"container/list"
	"slices"
	"sync"
	"time"
)

// cache is a bounded LRU of completed keys. It only ever holds receipts, so
// a hit can only turn a store round trip into the same Duplicate answer.
type cache struct {
	mu    sync.Mutex
	size  int
	order *list.List // front: most recently used; values are *cacheItem
	items map[string]*list.Element
}

type cacheEntry struct {
	fingerprint string
	result      []byte
	omitted     bool
	attempts    int
	expiresAt   time.Time
}

type cacheItem struct {
	key string
	cacheEntry
}

func newCache(size int) *cache {
	return &cache{size: size, order: list.New(), items: make(map[string]*list.Element, size)}
}

func (c *cache) get(key string, now time.Time) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return cacheEntry{}, false
	}
	it := el.Value.(*cacheItem)
	if !now.Before(it.expiresAt) {
		c.order.Remove(el)
		delete(c.items, key)
		return cacheEntry{}, false
	}
	c.order.MoveToFront(el)
	e := it.cacheEntry
	e.result = slices.Clone(e.result) // callers own what they are given
	return e, true
}

func (c *cache) put(key string, e cacheEntry) {
	e.result = slices.Clone(e.result)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*cacheItem).cacheEntry = e
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, cacheEntry: e})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheItem).key)
	}
}
