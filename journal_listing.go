// This file holds the journal's listings: Pending, for Resume, and
// Operations, for tools that show a journal whole.

package idem

import (
	"errors"
	"maps"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// unreadable is a record that cannot be read, and why.
type unreadable struct {
	key string
	err error // wraps ErrJournalCorrupt, names the file and the key
}

// Pending returns every operation that is still pending, oldest first.
//
// A record that cannot be read (its checksum does not match, say) is never
// returned, nor sent by Resume. If the pending index names it, or names a
// key with no record, it is named in err, which wraps ErrJournalCorrupt
// and joins one error per such record, each naming the file and the key.
// The readable operations are returned even then, so that one damaged
// record does not hide the others. A pending record the index lost is
// found all the same: Pending reads every record, and the index only
// tells which unreadable ones were pending.
func (j *Journal) Pending() ([]*Operation, error) {
	ops, bad, err := j.pending()
	if err != nil {
		return nil, err
	}
	return ops, joinUnreadable(bad)
}

// pending returns the readable pending operations, oldest first, and the
// records the pending index names that cannot be read, in key order.
func (j *Journal) pending() (ops []*Operation, bad []unreadable, err error) {
	lazy := j.overlay()
	err = j.view(func(tx *bolt.Tx) error {
		ops, bad = nil, nil
		index := tx.Bucket(bucketPending)
		records := tx.Bucket(bucketOps)
		err := records.ForEach(func(k, _ []byte) error {
			key := string(k)
			op, err := j.read(tx, key)
			switch {
			case err != nil && index.Get(k) != nil:
				bad = append(bad, unreadable{key, err})
			case err == nil && op.State == Pending:
				ops = append(ops, op)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return index.ForEach(func(k, _ []byte) error {
			if records.Get(k) == nil {
				key := string(k)
				bad = append(bad, unreadable{key, j.corrupt(key, errors.New("the pending index names a record that is not there"))})
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	j.viewed()
	ops = newest(ops, lazy)
	ops = slices.DeleteFunc(ops, func(op *Operation) bool { return op.State != Pending })
	sortOldestFirst(ops)
	slices.SortFunc(bad, func(a, b unreadable) int { return strings.Compare(a.key, b.key) })
	return ops, bad, nil
}

// Operations returns the journal's operations in any of the given states,
// or in every state if none is given, oldest first (by CreatedAt, then by
// key): a stable order, for tools that list a journal or look for one
// operation in it. It reads the whole journal.
//
// A record that cannot be read is not returned: it is named in err, which
// wraps ErrJournalCorrupt and joins one error per such record, each naming
// the file and the key; its state being unknown, it is named whatever
// states were asked for. The readable operations are returned even then.
func (j *Journal) Operations(states ...State) ([]*Operation, error) {
	var ops []*Operation
	var bad []unreadable
	lazy := j.overlay()
	err := j.view(func(tx *bolt.Tx) error {
		ops, bad = nil, nil
		return tx.Bucket(bucketOps).ForEach(func(k, _ []byte) error {
			key := string(k)
			op, err := j.read(tx, key)
			if err != nil {
				bad = append(bad, unreadable{key, err})
			} else {
				ops = append(ops, op)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	j.viewed()
	ops = newest(ops, lazy)
	if len(states) > 0 {
		ops = slices.DeleteFunc(ops, func(op *Operation) bool { return !slices.Contains(states, op.State) })
	}
	sortOldestFirst(ops)
	return ops, joinUnreadable(bad)
}

// overlay returns a snapshot of the lazily written versions that wait
// for a commit, by key. Its operations are shared with the overlay, which
// never changes them: a listing clones the ones it returns.
//
// A listing takes it before it reads the file, never after: a lazy write
// committed in between leaves the overlay as it lands in the file, so an
// overlay read after the file could miss it both ways, and the listing
// would return the operation as it was before the write (pending, for
// Resume to send again). Taken before, the snapshot holds every lazy
// write the file read may have missed; newest says which version wins.
func (j *Journal) overlay() map[string]*Operation {
	j.lazyMu.Lock()
	defer j.lazyMu.Unlock()
	if len(j.lazy) == 0 {
		return nil
	}
	return maps.Clone(j.lazy)
}

// newest replaces each operation read from the file by its lazily written
// version in lazy (a snapshot from overlay, taken before the file was
// read) where that version is the newer one. A lazy write moves a pending
// operation (see State's table), compare-and-set, so its version is newer
// exactly while the file still holds the operation pending. A record in
// any other state was written by the lazy write itself (committed since
// the snapshot) or by a move that made it needless (Abandon: the lazy
// write finds the record moved and is not made), and the file's version
// wins.
func newest(ops []*Operation, lazy map[string]*Operation) []*Operation {
	for i, op := range ops {
		if newer, ok := lazy[op.Key]; ok && op.State == Pending {
			ops[i] = newer.clone()
		}
	}
	return ops
}

// viewed calls testHookViewed, if it is set.
func (j *Journal) viewed() {
	if j.testHookViewed != nil {
		j.testHookViewed()
	}
}

func sortOldestFirst(ops []*Operation) {
	slices.SortFunc(ops, func(a, b *Operation) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

func joinUnreadable(bad []unreadable) error {
	if len(bad) == 0 {
		return nil
	}
	errs := make([]error, len(bad))
	for i, u := range bad {
		errs[i] = u.err
	}
	return errors.Join(errs...)
}
