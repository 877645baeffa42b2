// This file holds CompactJournal, which gives a journal's free pages back
// to the file system, safely against a crash at any point.

package idem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// CompactJournal rewrites the journal at path into a file that holds its
// records and nothing else, and returns the file's size before and after,
// in bytes. bbolt never gives space back to the file system: the pages
// Purge frees are reused for new records, but the file keeps its size, so
// a journal that once held a 100 MB body stays 100 MB for good.
//
// The journal must not be in use: CompactJournal opens it as OpenJournal
// does, waiting up to opts.LockTimeout for a process that holds it
// (ErrJournalLocked after that), and holds its lock until the end, so no
// client writes to the file while it is copied. Opening it purges
// operations past opts.PurgeAfter first, as OpenJournal does; pass a
// negative PurgeAfter to keep every record. A path with no journal is an
// error wrapping fs.ErrNotExist: nothing is created.
//
// The copy is written to a temporary file in the journal's directory
// (the journal's name plus ".compact-" and a random suffix), synced,
// checked as OpenJournal checks a file, renamed over the journal, and the
// directory synced. A crash at any point, SIGKILL or power loss, leaves
// at path either the old journal or the new one, each whole and holding
// every record, and at worst a temporary file, which the next
// CompactJournal removes. A process that was waiting for the old file's
// lock opens the new file instead (see OpenJournal).
func CompactJournal(path string, opts JournalOptions) (before, after int64, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("idem: compact journal: %w", err)
	}
	before = info.Size()
	j, err := OpenJournal(path, opts)
	if err != nil {
		return before, 0, err
	}
	defer j.db.Close()
	if _, err := j.stop(); err != nil {
		return before, 0, err
	}
	removeStale(path)
	tmp, err := j.compactTo()
	if err != nil {
		return before, 0, err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	compactStep("checked")
	if err := os.Rename(tmp, path); err != nil {
		return before, 0, fmt.Errorf("idem: compact journal: %w", err)
	}
	compactStep("renamed")
	// The rename is in place for this machine's processes; the
	// directory's sync makes it survive a power loss too. If it fails,
	// the new file is in place all the same.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return before, 0, fmt.Errorf("idem: compact journal: %s: %w", filepath.Dir(path), err)
	}
	compactStep("dir synced")
	if info, err = os.Stat(path); err != nil {
		return before, 0, fmt.Errorf("idem: compact journal: %w", err)
	}
	return before, info.Size(), nil
}

// compactChunk bounds the bytes of records one transaction of the copy
// writes, and so the memory the copy takes (bbolt holds a transaction's
// pages in memory until it commits). A journal whose records fit is
// copied in one transaction, which writes each page once and makes the
// smallest file; a larger one in several, whose commits rewrite the
// pages they share. A variable for the crash test.
var compactChunk = 64 << 20

// compactTo copies j's buckets into a new file next to it, syncs the file
// and checks it, and returns its name. j is stopped: the copy reads the
// file alone, under its lock.
func (j *Journal) compactTo() (name string, err error) {
	f, err := os.CreateTemp(filepath.Dir(j.path), filepath.Base(j.path)+".compact-*")
	if err != nil {
		return "", fmt.Errorf("idem: compact journal: %w", err)
	}
	name = f.Name()
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(name)
		}
	}()
	dst, err := bolt.Open(name, 0o600, &bolt.Options{
		Timeout:        j.opts.LockTimeout,
		NoFreelistSync: !j.opts.syncFreelist,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return "", fmt.Errorf("idem: compact journal: %s: %w", name, err)
	}
	err = j.db.View(func(src *bolt.Tx) error { return copyBuckets(dst, src) })
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("idem: compact journal: %s: %w", j.path, err)
	}
	compactStep("copied")
	// Each of bbolt's commits synced the file's data; this syncs the rest
	// of what the rename will expose (its size, its metadata).
	if err := syncFile(name); err != nil {
		return "", fmt.Errorf("idem: compact journal: %s: %w", name, err)
	}
	compactStep("synced")
	b, err := os.ReadFile(name)
	if err == nil {
		err = checkFile(b)
	}
	if err != nil {
		return "", fmt.Errorf("idem: compact journal: the copy %s does not check: %w", name, err)
	}
	return name, nil
}

// copyBuckets copies every bucket of src, in key order, into dst, in
// transactions of up to compactChunk bytes. Keys arrive in order, so
// pages are filled whole (FillPercent 1), which leaves the copy as small
// as bbolt can make it. A journal has no nested buckets; one is refused
// as damage.
func copyBuckets(dst *bolt.DB, src *bolt.Tx) error {
	tx, err := dst.Begin(true)
	if err != nil {
		return err
	}
	defer func() { tx.Rollback() }()
	var size int
	err = src.ForEach(func(name []byte, b *bolt.Bucket) error {
		out, err := tx.CreateBucket(name)
		if err != nil {
			return err
		}
		if err := out.SetSequence(b.Sequence()); err != nil {
			return err
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return fmt.Errorf("%w: bucket %q holds a bucket, %q", ErrJournalCorrupt, name, k)
			}
			if size += len(k) + len(v); size > compactChunk {
				if err := tx.Commit(); err != nil {
					return err
				}
				compactStep("chunk")
				if tx, err = dst.Begin(true); err != nil {
					return err
				}
				size = len(k) + len(v)
			}
			out = tx.Bucket(name)
			out.FillPercent = 1
			// bbolt keeps v only for src's transaction; Put copies it.
			if err := out.Put(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return checkCopy(dst, src)
}

// checkCopy compares dst with src, bucket by bucket and record by record.
func checkCopy(dst *bolt.DB, src *bolt.Tx) error {
	return dst.View(func(tx *bolt.Tx) error {
		buckets := 0
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { buckets++; return nil })
		err := src.ForEach(func(name []byte, b *bolt.Bucket) error {
			buckets--
			out := tx.Bucket(name)
			if out == nil || out.Stats().KeyN != b.Stats().KeyN || out.Sequence() != b.Sequence() {
				return fmt.Errorf("the copy of bucket %q differs", name)
			}
			return b.ForEach(func(k, v []byte) error {
				if !bytes.Equal(out.Get(k), v) {
					return fmt.Errorf("the copy of record %q in bucket %q differs", k, name)
				}
				return nil
			})
		})
		if err == nil && buckets != 0 {
			err = errors.New("the copy has other buckets")
		}
		return err
	})
}

// removeStale removes the temporary files compactions of the journal at
// path left behind when they died. It runs under the journal's lock, so
// no compaction of it is under way.
func removeStale(path string) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+".compact-"
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func syncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// testCompactStep, if set, is called at each step of a compaction: after
// each transaction of the copy ("chunk"), once the copy is made
// ("copied"), synced ("synced"), checked ("checked"), renamed over the
// journal ("renamed"), and the directory synced ("dir synced"). The crash
// test kills the process there. Tests only.
var testCompactStep func(step string)

func compactStep(step string) {
	if testCompactStep != nil {
		testCompactStep(step)
	}
}
