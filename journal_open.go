// This file holds what OpenJournal does before it reads a journal: the
// checks of its path and file, and openLocked, which opens the bbolt file
// under its lock and makes sure the file it holds is still the journal's.

package idem

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// errReplaced: the file opened was replaced at its path (CompactJournal
// renamed a compacted copy over it) while the opener waited for its lock.
var errReplaced = errors.New("idem: journal file replaced while opening it")

// maxReplaced bounds how many times OpenJournal opens again a journal
// that keeps being replaced under it.
const maxReplaced = 8

// openLocked opens the bbolt file at path with o and returns it with the
// file bbolt holds. Once bbolt holds the file's lock, openLocked checks
// that the file is still the one at path, and returns errReplaced if not.
//
// Why: CompactJournal writes a compacted copy and renames it over the
// journal while it holds the old file's lock. A process that opened the
// old file and waits for its lock gets it when the compaction ends, and
// would then write to a file that is no longer at path, lost to every
// later reader. bbolt keeps the file open, so its identity cannot be
// taken by another file while it is compared.
func openLocked(path string, o *bolt.Options) (*bolt.DB, *os.File, error) {
	var f *os.File
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		file, err := os.OpenFile(name, flag, perm)
		f = file
		if err == nil && testOpened != nil {
			testOpened(name) // bbolt takes the lock next
		}
		return file, err
	}
	db, err := bolt.Open(path, 0o600, o)
	if err != nil {
		return nil, nil, err
	}
	if !testSkipReplacedCheck && !samePath(f, path) {
		db.Close()
		return nil, nil, errReplaced
	}
	return db, f, nil
}

// testSkipReplacedCheck turns openLocked's check off, for the test that
// shows what it prevents; testOpened, if set, is called once openLocked
// has opened a file, before bbolt waits for its lock. Tests only.
var (
	testSkipReplacedCheck bool
	testOpened            func(name string)
)

// samePath reports whether f is the file at path.
func samePath(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// readFile reads the whole of f, from its start.
func readFile(f *os.File) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, info.Size())
	n, err := f.ReadAt(b, 0)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	return b[:n], err
}

// checkExisting checks an existing journal file before bbolt opens it for
// writing, holding bbolt's shared lock on it while it reads it whole: a
// damaged file is ErrJournalCorrupt naming it, never a crash (see
// checkFile). A file another process holds is ErrJournalLocked.
func checkExisting(path string, opts JournalOptions) error {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return checkDir(path)
	}
	if err != nil {
		return fmt.Errorf("idem: open journal: %w", err)
	}
	switch {
	case info.IsDir():
		return fmt.Errorf("%w: %s is a directory", ErrJournalPath, path)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrJournalPath, path, info.Mode().Type())
	}
	if info.Size() == 0 {
		return nil // bbolt makes a new journal of it
	}
	shared, f, err := openLocked(path, &bolt.Options{ReadOnly: true, Timeout: opts.LockTimeout})
	if errors.Is(err, errReplaced) {
		return err
	}
	if err != nil {
		return openError(path, opts, err)
	}
	defer shared.Close()
	b, err := readFile(f)
	if err != nil {
		return fmt.Errorf("idem: open journal: %w", err)
	}
	if err := checkFile(b); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrJournalCorrupt, path, err)
	}
	return nil
}

// checkDir checks that the directory a new journal at path would go in
// exists: bbolt would say only "no such file or directory". The error
// wraps ErrJournalPath, and fs.ErrNotExist when the directory is missing.
func checkDir(path string) error {
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s: directory %s does not exist (%w)", ErrJournalPath, path, dir, fs.ErrNotExist)
	case errors.Is(err, syscall.ENOTDIR):
		// A file stands where a directory should: name it.
		for d := filepath.Dir(dir); d != dir; dir, d = d, filepath.Dir(d) {
			if info, err := os.Stat(d); err == nil && !info.IsDir() {
				return fmt.Errorf("%w: %s: %s is not a directory", ErrJournalPath, path, d)
			}
		}
		return fmt.Errorf("%w: %s: %s is not a directory", ErrJournalPath, path, dir)
	case err == nil && !info.IsDir():
		return fmt.Errorf("%w: %s: %s is not a directory", ErrJournalPath, path, dir)
	case err != nil:
		return fmt.Errorf("idem: open journal: %w", err)
	}
	return nil
}

// panicked maps the path of each journal whose opening panicked in this
// process to the error it gave.
var panicked sync.Map

func openError(path string, opts JournalOptions, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, bolterr.ErrTimeout):
		return fmt.Errorf("%w: %s (waited %s)", ErrJournalLocked, path, opts.LockTimeout)
	case errors.As(err, &pe):
		return fmt.Errorf("idem: open journal: %w", err)
	}
	return fmt.Errorf("%w: %s: %v", ErrJournalCorrupt, path, err)
}
