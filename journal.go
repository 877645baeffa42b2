// This file holds Journal: opening the bbolt file, reading records, the
// pending index, name bindings and Purge.

package idem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// JournalOptions configures [OpenJournal]. The zero value means the
// documented defaults.
type JournalOptions struct {
	// LockTimeout bounds how long OpenJournal waits while another process
	// holds the file. Default 1s. On timeout OpenJournal returns
	// ErrJournalLocked.
	LockTimeout time.Duration
	// PurgeAfter is how long operations that are not pending (completed,
	// failed, refused, expired, abandoned) are kept, counted from their
	// last update. Older ones are purged when the journal opens, and by
	// Purge. Default DefaultPurgeAfter. Negative keeps them forever. Pending
	// operations are never purged. It is the journal's own housekeeping, unrelated to the
	// server's key retention (Options.KeyRetention).
	PurgeAfter time.Duration

	// Observer, if set, hears of the journal's commits (see
	// JournalObserver). Default nil: no events, at no cost.
	Observer *JournalObserver

	// syncFreelist writes bbolt's free list with every commit, so that
	// opening the file does not rebuild it: the setting the journal
	// benchmark compares with the default.
	syncFreelist bool
}

// DefaultPurgeAfter is how long a journal keeps finished operations
// unless JournalOptions.PurgeAfter says otherwise: 7 days.
const DefaultPurgeAfter = 7 * 24 * time.Hour

func (o JournalOptions) withDefaults() (JournalOptions, error) {
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	if o.PurgeAfter == 0 {
		o.PurgeAfter = DefaultPurgeAfter
	}
	return o, nil
}

// A Journal is the client's durable record of operations: one bbolt file,
// mode 0600, held by one process at a time. A [Client] writes each
// operation to it, and fsyncs, before the operation's first attempt, so that
// a crash of the process loses no operation: after a restart
// [Client.Resume] continues every pending one with the same key and bytes.
//
// Writes from concurrent operations share fsyncs (group commit): while one
// commit is in progress the next ones queue, and go to disk together as soon
// as it ends. There is no fixed batching delay. Final outcomes are written
// lazily: they ride on the next commit, or are flushed within 20 ms when
// there is none, since losing one in a crash costs only a
// resend that the server answers from its own record.
//
// A Journal is safe for concurrent use. Close it when done; Close flushes.
type Journal struct {
	path string
	db   *bolt.DB
	opts JournalOptions

	mu     sync.RWMutex // held for reading while submitting, for writing by Close
	closed bool
	reqs   chan *commitReq
	done   chan struct{}

	commits    atomic.Int64 // bbolt write transactions, for tests and benchmarks
	commitTime atomic.Int64 // nanoseconds spent in them, for benchmarks

	lazyMu sync.Mutex
	lazy   map[string]*Operation // written lazily, not yet committed
	err    error                 // first failed lazy commit, reported by Close

	// testHookViewed, if set, is called by the listings (Pending,
	// Operations) once they have read the file, before they read the
	// overlay of lazy writes. Tests only.
	testHookViewed func()

	names *nameIndex // the names records carry (see journal_names.go)
	locks keyLocks   // calls with one key, one at a time, from every Client
}

var (
	bucketMeta    = []byte("idem")
	bucketOps     = []byte("ops")
	bucketPending = []byte("pending")
	bucketNames   = []byte("names")

	metaFormat  = []byte("format")
	metaVersion = []byte("version")
	formatName  = []byte("idem-journal")
)

// journalVersion is the file format version this package writes.
const journalVersion = 1

// lazyFlushDelay bounds how long a lazily written outcome waits for a
// commit to ride on.
const lazyFlushDelay = 20 * time.Millisecond

// OpenJournal opens the journal at path, creating it with mode 0600 if it
// does not exist. It refuses contradictory options. If another process
// holds it, OpenJournal gives up after opts.LockTimeout with an error
// wrapping ErrJournalLocked. A file that is
// not an idem journal, or is corrupt, gives an error wrapping
// ErrJournalCorrupt that names the file; the file is never replaced. A
// path that is a directory, or names no regular file, or whose directory
// does not exist, gives an error wrapping ErrJournalPath that says so.
//
// A file that CompactJournal replaced while OpenJournal waited for its
// lock is let go, and the new file at path opened instead.
func OpenJournal(path string, opts JournalOptions) (*Journal, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		j, err := openOnce(path, opts)
		if !errors.Is(err, errReplaced) {
			return j, err
		}
		if try == maxReplaced {
			return nil, fmt.Errorf("%w: %s: replaced %d times while it was being opened", ErrJournalLocked, path, try)
		}
	}
}

// openOnce is one try of OpenJournal. It returns errReplaced if the
// file it opened is no longer at path.
func openOnce(path string, opts JournalOptions) (j *Journal, err error) {
	defer func() {
		// bbolt panics on some damaged files rather than returning an error.
		if p := recover(); p != nil {
			j, err = nil, fmt.Errorf("%w: %s: %v", ErrJournalCorrupt, path, p)
			// bbolt's memory map of the file, beyond reach once it panics,
			// keeps its lock held for as long as this process runs.
			panicked.Store(path, err)
		}
	}()
	if err := checkExisting(path, opts); err != nil {
		return nil, err
	}
	db, _, err := openLocked(path, &bolt.Options{
		Timeout:        opts.LockTimeout,
		NoFreelistSync: !opts.syncFreelist,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, errReplaced) {
		return nil, err
	}
	if err != nil {
		if earlier, ok := panicked.Load(path); ok && errors.Is(err, bolterr.ErrTimeout) {
			return nil, fmt.Errorf("%w (an earlier open in this process still holds the lock; replace the file and restart)", earlier.(error))
		}
		return nil, openError(path, opts, err)
	}
	j = &Journal{
		path:  path,
		db:    db,
		opts:  opts,
		reqs:  make(chan *commitReq, 1024),
		done:  make(chan struct{}),
		lazy:  make(map[string]*Operation),
		names: newNameIndex(),
	}
	if err := j.init(); err != nil {
		db.Close()
		return nil, err
	}
	go j.run()
	if opts.PurgeAfter > 0 {
		if _, err := j.Purge(opts.PurgeAfter); err != nil {
			j.Close()
			return nil, err
		}
	}
	if err := j.loadNames(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// init checks the file's format marker, or writes it into an empty file.
func (j *Journal) init() error {
	var fresh bool
	err := j.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty {
				return fmt.Errorf("%w: %s holds a bbolt database that is not an idem journal", ErrJournalCorrupt, j.path)
			}
			fresh = true
			return nil
		}
		if !bytes.Equal(meta.Get(metaFormat), formatName) {
			return fmt.Errorf("%w: %s holds a bbolt database that is not an idem journal", ErrJournalCorrupt, j.path)
		}
		v, n := binary.Uvarint(meta.Get(metaVersion))
		if n <= 0 || v != journalVersion {
			return fmt.Errorf("%w: %s has journal format version %d; this idem reads version %d", ErrJournalCorrupt, j.path, v, journalVersion)
		}
		for _, b := range [][]byte{bucketOps, bucketPending, bucketNames} {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("%w: %s lacks bucket %q", ErrJournalCorrupt, j.path, b)
			}
		}
		return nil
	})
	if err != nil || !fresh {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(metaFormat, formatName); err != nil {
			return err
		}
		if err := meta.Put(metaVersion, binary.AppendUvarint(nil, journalVersion)); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketOps, bucketPending, bucketNames} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Close flushes lazily written outcomes, closes the file and releases its
// lock. It returns the first error a lazy write met, if any. Calls after
// the first return nil.
func (j *Journal) Close() error {
	stopped, err := j.stop()
	if !stopped {
		return nil
	}
	if cerr := j.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// stop ends the journal's use once every write queued is made, and
// returns the first error a lazy write met. The file stays open and
// locked: Close closes it, CompactJournal copies it first. stopped is
// false if the journal was stopped already.
func (j *Journal) stop() (stopped bool, err error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return false, nil
	}
	j.closed = true
	close(j.reqs)
	j.mu.Unlock()
	<-j.done
	j.lazyMu.Lock()
	defer j.lazyMu.Unlock()
	return true, j.err
}

// Lookup returns the journal's record of the operation with key. ok is false
// if there is none.
func (j *Journal) Lookup(key string) (op *Operation, ok bool, err error) {
	op, err = j.get(key)
	return op, op != nil, err
}

// get returns the newest version of key's record: a lazily written one not
// yet committed, or the committed one. The result is the caller's to keep.
func (j *Journal) get(key string) (*Operation, error) {
	j.lazyMu.Lock()
	if op, ok := j.lazy[key]; ok {
		cp := op.clone()
		j.lazyMu.Unlock()
		return cp, nil
	}
	j.lazyMu.Unlock()
	var op *Operation
	err := j.view(func(tx *bolt.Tx) error {
		var err error
		op, err = j.read(tx, key)
		return err
	})
	return op, err
}

// view runs fn in a bbolt read transaction. As with writeTx, a panic of
// bbolt's over damage is an error, ErrJournalCorrupt.
func (j *Journal) view(fn func(*bolt.Tx) error) (err error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ErrJournalClosed
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: %v", ErrJournalCorrupt, j.path, p)
		}
	}()
	return j.db.View(fn)
}

func (j *Journal) read(tx *bolt.Tx, key string) (*Operation, error) {
	v := tx.Bucket(bucketOps).Get([]byte(key))
	if v == nil {
		return nil, nil
	}
	op, err := decodeOperation(v)
	if err == nil && op.Key != key {
		err = fmt.Errorf("filed under key %q", key)
	}
	if err != nil {
		return nil, j.corrupt(key, err)
	}
	return op, nil
}

// corrupt returns the error for key's record, which cannot be read: it
// wraps ErrJournalCorrupt and names the file and the key.
func (j *Journal) corrupt(key string, err error) error {
	return fmt.Errorf("%w: %s: record %q: %v", ErrJournalCorrupt, j.path, key, err)
}

// begin journals op durably unless its key is already known, in which case
// it writes nothing and returns the existing record. A key minted for this
// operation is not looked up: no record can hold it, and the lookups would
// cost a read transaction and the committer's time.
func (j *Journal) begin(op *Operation) (prev *Operation, err error) {
	defer func() {
		if err == nil && prev == nil {
			j.names.add(op.Name, 1)
		}
	}()
	if op.minted {
		return nil, j.submitRecord(op, stateNone, true, nil)
	}
	if prev, err := j.get(op.Key); err != nil || prev != nil {
		return prev, err
	}
	enc := op.encode(nil)
	err = j.submit(true, nil, func(tx *bolt.Tx) error {
		var err error
		if prev, err = j.read(tx, op.Key); err != nil || prev != nil {
			return err
		}
		if err := opsBucket(tx).Put([]byte(op.Key), enc); err != nil {
			return err
		}
		return tx.Bucket(bucketPending).Put([]byte(op.Key), nil)
	})
	return prev, err
}

// move records op's new state, made from the state from: lazily (visible
// to this process at once, on disk with the next commit) or durably,
// before it returns. The record is written only if it is still in the
// state from, as read again in the write's transaction; a durable write
// that finds it moved (abandoned, expired, purged) returns a *movedError
// and writes nothing. A lazy one is dropped then, and the record left as
// it is.
func (j *Journal) move(op *Operation, from State, durable bool) error {
	if durable {
		return j.submitRecord(op, from, true, nil)
	}
	cp := *op // the overlay's, which the caller cannot change
	return j.submitRecord(&cp, from, false, &cp)
}

// opsBucket returns tx's bucket of operation records, set to fill the
// pages it writes. Minted keys (UUIDv7, ULID) grow with time, so new
// records are appended at the right edge of the tree, where bbolt's
// default (split a page at half its size) would leave every page half
// full for good: two records of a 1 KiB request to a 4 KiB page instead
// of three, and a third more pages to write and fsync with every commit.
// A record that grows in place splits its page as before.
func opsBucket(tx *bolt.Tx) *bolt.Bucket {
	b := tx.Bucket(bucketOps)
	b.FillPercent = 1
	return b
}

// Purge deletes operations that are not pending (completed, failed,
// refused, expired, abandoned) last updated more than olderThan ago, with
// the name bindings of those operations. A binding whose operation has
// not been journaled yet is kept: NamedKey must go on returning its key.
// It returns how many operations it deleted. Pending operations are
// never purged, nor are records that cannot be decoded: reading one
// reports ErrJournalCorrupt.
func (j *Journal) Purge(olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	var n int
	var names []string // of the records deleted
	err := j.submit(true, nil, func(tx *bolt.Tx) error {
		n, names = 0, names[:0]
		ops := tx.Bucket(bucketOps)
		var doomed [][]byte
		gone := map[string]bool{}
		_ = ops.ForEach(func(k, v []byte) error {
			op, err := decodeOperation(v)
			if err != nil {
				return nil // left alone; reading it reports ErrJournalCorrupt
			}
			if op.State != Pending && op.UpdatedAt.Before(cutoff) {
				doomed = append(doomed, append([]byte(nil), k...))
				gone[string(k)] = true
				names = append(names, op.Name)
			}
			return nil
		})
		for _, k := range doomed {
			if err := ops.Delete(k); err != nil {
				return err
			}
		}
		n = len(doomed)
		bindings := tx.Bucket(bucketNames)
		var stale [][]byte
		_ = bindings.ForEach(func(k, v []byte) error {
			// A binding that cannot be read is left alone: NamedKey
			// reports it.
			if key, _, err := decodeName(string(k), v); err == nil && gone[key] {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range stale {
			if err := bindings.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for _, name := range names {
			j.names.add(name, -1)
		}
	}
	return n, err
}
