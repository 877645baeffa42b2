// This file holds checkFile, which reads a journal's bbolt file as plain
// bytes and finds damage before bbolt opens it for writing.

package idem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// Why idem checks the file itself: bbolt opened for writing loads its free
// list, and a file written with NoFreelistSync has none on disk, so bbolt
// rebuilds it by walking every page. On a damaged file that walk reports
// what it finds to a goroutine of its own that panics, which kills the
// process whatever its caller recovers; it can also follow a page number
// out of the memory map (a fault, not a panic) or round a cycle. A damaged
// free list page, for a file that has one, is read without bounds too.
//
// checkFile makes the same walk over the file's bytes, with every read
// bounds-checked, every page visited once, and the same rules bbolt's
// consistency check applies (page numbers in range, each page referenced
// once, page types, key order within and across pages), plus the free
// list. A file it passes is one bbolt can open and read without any of
// that, so OpenJournal calls it first and reports ErrJournalCorrupt
// instead of crashing.

// The bbolt file format (go.etcd.io/bbolt/internal/common), in the byte
// order of the machine that wrote it.
const (
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	pageElementSize = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderLen = 16 // root pgid u64, sequence u64

	branchPage   = 0x01
	leafPage     = 0x02
	metaPage     = 0x04
	freelistPage = 0x10
	bucketLeaf   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	metaSumLen  = 56 // the meta's bytes its checksum covers
	noFreelist  = 1<<64 - 1
	maxDepth    = 64   // no healthy B+tree of a journal is half as deep
	minPageSize = 1024 // the smallest page size bbolt probes for
	maxPageSize = 1 << 24
)

var native = binary.NativeEndian

// boltMeta is the part of a meta page checkFile uses.
type boltMeta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64
	pgid     uint64 // the high-water mark: pages in use are below it
	txid     uint64
}

// readMeta parses and validates the meta at page offset off of b, as
// bbolt's Meta.Validate does: magic, version and FNV-64a checksum.
func readMeta(b []byte, off int) (boltMeta, bool) {
	m := off + pageHeaderSize
	if off < 0 || m+metaSumLen+8 > len(b) {
		return boltMeta{}, false
	}
	p := b[m : m+metaSumLen+8]
	h := fnv.New64a()
	h.Write(p[:metaSumLen])
	if native.Uint32(p[0:]) != boltMagic || native.Uint32(p[4:]) != boltVersion ||
		native.Uint64(p[metaSumLen:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize: native.Uint32(p[8:]),
		root:     native.Uint64(p[16:]),
		freelist: native.Uint64(p[32:]),
		pgid:     native.Uint64(p[40:]),
		txid:     native.Uint64(p[48:]),
	}, true
}

// fileChecker walks one file's pages.
type fileChecker struct {
	b        []byte
	pageSize int
	hwm      uint64
	seen     []bool // pages reached, by page number
}

// checkFile reports the first damage it finds in the bbolt file b, or nil.
// It never panics, reads nothing out of b's bounds, and does work linear in
// len(b).
func checkFile(b []byte) error {
	// The page size, as bbolt finds it: from the first meta page, or else
	// from the second, probing the sizes bbolt probes.
	var ps int
	if m, ok := readMeta(b, 0); ok {
		ps = int(m.pageSize)
	} else {
		for i := 0; i <= 14; i++ {
			pos := minPageSize << i
			if pos >= len(b)-minPageSize {
				break
			}
			if m, ok := readMeta(b, pos); ok {
				ps = int(m.pageSize)
				break
			}
		}
	}
	if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		return errors.New("no valid meta page")
	}
	// The meta bbolt uses: the valid one with the higher transaction ID.
	m0, ok0 := readMeta(b, 0)
	m1, ok1 := readMeta(b, ps)
	m := m0
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		m = m1
	case !ok0:
		return errors.New("no valid meta page")
	}
	if int(m.pageSize) != ps {
		return fmt.Errorf("meta pages disagree on the page size (%d, %d)", m.pageSize, ps)
	}
	if m.pgid < 2 || m.pgid > uint64(len(b)/ps) {
		return fmt.Errorf("high-water mark %d is beyond the file's %d pages", m.pgid, len(b)/ps)
	}
	c := &fileChecker{b: b, pageSize: ps, hwm: m.pgid, seen: make([]bool, m.pgid)}
	c.seen[0], c.seen[1] = true, true
	if _, err := c.tree(m.root, nil, nil, 0); err != nil {
		return err
	}
	if m.freelist != noFreelist {
		return c.freelist(m.freelist)
	}
	return nil
}

// page returns page id's bytes, overflow pages included, after checking
// that it is in range, not reached before, and of one of the given types.
func (c *fileChecker) page(id uint64, types ...uint16) ([]byte, error) {
	if id < 2 || id >= c.hwm {
		return nil, fmt.Errorf("page %d: out of bounds (high-water mark %d)", id, c.hwm)
	}
	off := int(id) * c.pageSize
	hdr := c.b[off : off+pageHeaderSize]
	overflow := uint64(native.Uint32(hdr[12:]))
	if native.Uint64(hdr[0:]) != id {
		return nil, fmt.Errorf("page %d: header says page %d", id, native.Uint64(hdr[0:]))
	}
	if overflow >= c.hwm-id {
		return nil, fmt.Errorf("page %d: %d overflow pages run past the high-water mark", id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if c.seen[i] {
			return nil, fmt.Errorf("page %d: referenced more than once", i)
		}
		c.seen[i] = true
	}
	flags := native.Uint16(hdr[8:])
	for _, t := range types {
		if flags == t {
			return c.b[off : off+int(overflow+1)*c.pageSize], nil
		}
	}
	return nil, fmt.Errorf("page %d: unexpected type %#x", id, flags)
}

// elements returns the count of p's elements after checking they fit.
func elements(p []byte) (int, error) {
	n := int(native.Uint16(p[10:]))
	if pageHeaderSize+n*pageElementSize > len(p) {
		return 0, fmt.Errorf("%d elements overrun the page", n)
	}
	return n, nil
}

// span returns the n bytes at element i's offset plus pos, if they are in p.
func span(p []byte, i int, pos uint32, n uint64) ([]byte, bool) {
	start := uint64(pageHeaderSize+i*pageElementSize) + uint64(pos)
	end := start + n
	if end > uint64(len(p)) {
		return nil, false
	}
	return p[start:end], true
}

// tree checks the subtree rooted at page id, whose keys must lie in
// [lo, hi) (nil: unbounded), and returns its largest key: the rules of
// bbolt's recursivelyCheckPageKeyOrder, on pages reached once each.
func (c *fileChecker) tree(id uint64, lo, hi []byte, depth int) (last []byte, err error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("page %d: tree deeper than %d levels", id, maxDepth)
	}
	p, err := c.page(id, branchPage, leafPage)
	if err != nil {
		return nil, err
	}
	n, err := elements(p)
	if err != nil {
		return nil, fmt.Errorf("page %d: %v", id, err)
	}
	if native.Uint16(p[8:]) == leafPage {
		return c.leaf(p, lo, hi, fmt.Sprintf("page %d", id))
	}
	if n == 0 {
		return nil, fmt.Errorf("page %d: an empty branch", id)
	}
	keys := make([][]byte, n)
	children := make([]uint64, n)
	for i := range n {
		e := p[pageHeaderSize+i*pageElementSize:]
		k, ok := span(p, i, native.Uint32(e[0:]), uint64(native.Uint32(e[4:])))
		if !ok {
			return nil, fmt.Errorf("page %d: key %d overruns the page", id, i)
		}
		keys[i], children[i] = k, native.Uint64(e[8:])
	}
	prev := lo
	for i := range n {
		if err := inOrder(keys[i], prev, hi, i > 0); err != nil {
			return nil, fmt.Errorf("page %d: key %d: %v", id, i, err)
		}
		upper := hi
		if i+1 < n {
			upper = keys[i+1]
		}
		if prev, err = c.tree(children[i], keys[i], upper, depth+1); err != nil {
			return nil, err
		}
	}
	return prev, nil
}

// leaf checks a leaf page's elements (a page of the file, or an inline
// bucket's page), and the buckets its values hold.
func (c *fileChecker) leaf(p []byte, lo, hi []byte, where string) (last []byte, err error) {
	n, err := elements(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	prev := lo
	for i := range n {
		e := p[pageHeaderSize+i*pageElementSize:]
		flags, pos, ksize, vsize := native.Uint32(e[0:]), native.Uint32(e[4:]), native.Uint32(e[8:]), native.Uint32(e[12:])
		kv, ok := span(p, i, pos, uint64(ksize)+uint64(vsize))
		if !ok {
			return nil, fmt.Errorf("%s: element %d overruns the page", where, i)
		}
		k, v := kv[:ksize], kv[ksize:]
		if err := inOrder(k, prev, hi, i > 0); err != nil {
			return nil, fmt.Errorf("%s: key %d: %v", where, i, err)
		}
		prev = k
		switch flags {
		case 0:
		case bucketLeaf:
			if err := c.bucket(v, fmt.Sprintf("%s: bucket %q", where, k)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: element %d has flags %#x", where, i, flags)
		}
	}
	return prev, nil
}

// bucket checks a bucket from its header v: a tree of pages, or an inline
// page inside v.
func (c *fileChecker) bucket(v []byte, where string) error {
	if len(v) < bucketHeaderLen {
		return fmt.Errorf("%s: header too short", where)
	}
	if root := native.Uint64(v); root != 0 {
		_, err := c.tree(root, nil, nil, 0)
		return err
	}
	inline := v[bucketHeaderLen:]
	if len(inline) < pageHeaderSize || native.Uint16(inline[8:]) != leafPage {
		return fmt.Errorf("%s: inline page is not a leaf", where)
	}
	// An inline bucket holds no buckets (bbolt inlines only those that
	// hold none); leaf rejects none, so check before it recurses.
	n, err := elements(inline)
	if err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	for i := range n {
		if native.Uint32(inline[pageHeaderSize+i*pageElementSize:]) != 0 {
			return fmt.Errorf("%s: inline bucket holds a bucket", where)
		}
	}
	_, err = c.leaf(inline, nil, nil, where)
	return err
}

// inOrder checks key k against the previous key (or the lower bound, for
// the first) and the upper bound hi: bbolt's verifyKeyOrder.
func inOrder(k, prev, hi []byte, strict bool) error {
	cmp := bytes.Compare(prev, k)
	switch {
	case prev != nil && cmp > 0, strict && cmp == 0:
		return errors.New("out of order")
	case hi != nil && bytes.Compare(k, hi) >= 0:
		return errors.New("not below the next key of its parent")
	}
	return nil
}

// freelist checks the free list page: in range, and listing pages that
// are in range, listed once, and not in use.
func (c *fileChecker) freelist(id uint64) error {
	p, err := c.page(id, freelistPage)
	if err != nil {
		return fmt.Errorf("free list: %v", err)
	}
	start, count := pageHeaderSize, uint64(native.Uint16(p[10:]))
	if count == 0xFFFF {
		if len(p) < pageHeaderSize+8 {
			return fmt.Errorf("free list page %d: too short", id)
		}
		count, start = native.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(p)-start)/8 {
		return fmt.Errorf("free list page %d: %d entries overrun the page", id, count)
	}
	for i := range int(count) {
		free := native.Uint64(p[start+8*i:])
		if free < 2 || free >= c.hwm {
			return fmt.Errorf("free list page %d: free page %d out of bounds", id, free)
		}
		if c.seen[free] {
			return fmt.Errorf("free list page %d: page %d is free and in use, or listed twice", id, free)
		}
		c.seen[free] = true
	}
	return nil
}
