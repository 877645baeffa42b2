// This file holds cache, the bounded least-recently-used map of completed
// records.

package cachestore

import (
	"container/list"
	"sync"
	"time"

	"github.com/idemhq/idem/server"
)

// cache is a bounded LRU map from keys to completed records. One mutex
// guards it, held for a map lookup and a list move; it is safe for
// concurrent use.
type cache struct {
	maxEntries int
	maxBytes   int64
	maxEntry   int64 // the largest record kept: maxBytes/8
	maxAge     time.Duration
	now        func() time.Time

	mu      sync.Mutex
	entries map[server.Key]*list.Element // of *entry
	lru     list.List                    // most recently used in front
	bytes   int64
	hits    int64
	misses  int64
	evicted int64
}

// entry is one cached record; until is when it stops being served: the
// record's ExpiresAt, or MaxAge after it was cached if sooner.
type entry struct {
	key   server.Key
	rec   server.Record
	until time.Time
	size  int64
}

func newCache(o Options) *cache {
	return &cache{
		maxEntries: o.MaxEntries,
		maxBytes:   o.MaxBytes,
		maxEntry:   o.MaxBytes / 8,
		maxAge:     o.MaxAge,
		now:        o.Now,
		entries:    make(map[server.Key]*list.Element),
	}
}

// get returns the record of k if one is cached and still served. An
// entry past its time is dropped.
func (c *cache) get(k server.Key) (server.Record, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		c.misses++
		return server.Record{}, false
	}
	e := el.Value.(*entry)
	if !now.Before(e.until) {
		c.remove(el)
		c.misses++
		return server.Record{}, false
	}
	c.lru.MoveToFront(el)
	c.hits++
	return e.rec, true
}

// put caches rec, a completed record of k, unless it has expired or is
// too large, dropping the least recently used entries to make room.
func (c *cache) put(k server.Key, rec server.Record) {
	now := c.now()
	until := rec.ExpiresAt
	if c.maxAge > 0 && now.Add(c.maxAge).Before(until) {
		until = now.Add(c.maxAge)
	}
	size := sizeOf(k, rec)
	if !now.Before(until) || size > c.maxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.remove(el) // a record the store reported again, maybe a new one after an expiry
	}
	for c.lru.Len() > 0 && (c.lru.Len() >= c.maxEntries || c.bytes+size > c.maxBytes) {
		c.remove(c.lru.Back())
		c.evicted++
	}
	c.entries[k] = c.lru.PushFront(&entry{key: k, rec: rec, until: until, size: size})
	c.bytes += size
}

// drop forgets the entry of k, if there is one.
func (c *cache) drop(k server.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.remove(el)
	}
}

// remove unlinks el; c.mu is held.
func (c *cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

func (c *cache) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits, Misses: c.misses, Entries: c.lru.Len(), Bytes: c.bytes, Evicted: c.evicted}
}

// sizeOf is what rec, cached under k, counts (see Options.MaxBytes).
func sizeOf(k server.Key, rec server.Record) int64 {
	n := EntryOverhead + len(k.Scope) + len(k.Key) + len(rec.Fingerprint) + len(rec.Response.Body)
	for name, vals := range rec.Response.Header {
		n += 64 + len(name)
		for _, v := range vals {
			n += 16 + len(v)
		}
	}
	return int64(n)
}
