// This file holds name bindings: the journal's durable map from an
// application's name for an operation to its idempotency key (see
// Client.NamedKey), their checksummed encoding, and the index of the names
// the journal's records carry.

package idem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemhq/idem/internal/wire"
)

// A binding is the value filed under its name in the names bucket. Two
// versions are read:
//
//	version  layout
//	1        key, created
//	2        0x00, 2, key, created, then a CRC-32C (Castagnoli) of the
//	         name and of every byte before it, big-endian, as the last 4
//	         bytes
//
// A version 1 binding starts with its key's length, which is never 0, so
// the leading 0x00 tells the two apart. The checksum makes a damaged
// binding an error, ErrJournalCorrupt, rather than an unbound name: a
// name whose key changed would send its operation a second time under
// another key. It covers the name, so a binding moved under another name
// does not pass either.
const bindingVersion = 2

// encodeName returns the binding of name to key, made at created.
func encodeName(name, key string, created time.Time) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64*2+len(key)+4)
	b = append(b, 0, bindingVersion)
	b = wire.AppendString(b, key)
	b = wire.AppendTime(b, created)
	return binary.BigEndian.AppendUint32(b, bindingSum(name, b))
}

func bindingSum(name string, b []byte) uint32 {
	sum := crc32.Update(0, castagnoli, []byte(name))
	return crc32.Update(sum, castagnoli, b)
}

// errBindingChecksum is the error for a binding whose checksum does not
// match.
var errBindingChecksum = errors.New("checksum mismatch: the binding was changed after it was written")

// decodeName reads name's binding v, of either version. v nil is no
// binding: an empty key and no error.
func decodeName(name string, v []byte) (key string, created time.Time, err error) {
	if v == nil {
		return "", time.Time{}, nil
	}
	if len(v) > 0 && v[0] == 0 {
		if len(v) < 2+4 || v[1] != bindingVersion {
			return "", time.Time{}, fmt.Errorf("unknown binding version")
		}
		body := v[:len(v)-4]
		if bindingSum(name, body) != binary.BigEndian.Uint32(v[len(v)-4:]) {
			return "", time.Time{}, errBindingChecksum
		}
		v = body[2:]
	}
	d := wire.NewDecoder(v)
	key, created = d.String(), d.Time()
	if err := d.End(); err != nil {
		return "", time.Time{}, err
	}
	if key == "" {
		return "", time.Time{}, wire.ErrMalformed
	}
	return key, created, nil
}

// namedKey returns the key bound to name, binding a fresh one from mint
// durably on first use. It fails with ErrJournalCorrupt, and mints
// nothing, if name's binding cannot be read, if it names a record made
// for another name, or if a record made for name exists while its binding
// does not: each would have the operation sent again under another key.
func (j *Journal) namedKey(name string, mint func() string) (string, error) {
	var key string
	lookup := func(tx *bolt.Tx) error {
		var err error
		if key, _, err = decodeName(name, tx.Bucket(bucketNames).Get([]byte(name))); err != nil {
			return j.corruptName(name, err)
		}
		if key == "" {
			return j.unbound(tx, name)
		}
		return j.checkBound(tx, name, key)
	}
	if err := j.view(lookup); err != nil || key != "" {
		return key, err
	}
	fresh := mint()
	err := j.submit(true, nil, func(tx *bolt.Tx) error {
		if err := lookup(tx); err != nil || key != "" {
			return err
		}
		key = fresh
		return tx.Bucket(bucketNames).Put([]byte(name), encodeName(name, fresh, time.Now()))
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// checkBound checks that the record filed under key, if there is one yet,
// was made for name, or for no name (Do with a key from NamedKey).
func (j *Journal) checkBound(tx *bolt.Tx, name, key string) error {
	v := tx.Bucket(bucketOps).Get([]byte(key))
	if v == nil {
		// Bound, not journaled yet; unless a record made for name is
		// filed under another key, and the binding was changed.
		return j.unbound(tx, name)
	}
	op, err := j.read(tx, key)
	if err != nil {
		return err
	}
	if op.Name != "" && op.Name != name {
		return j.corruptName(name, fmt.Errorf("it names key %q, whose record is for the name %q", key, op.Name))
	}
	return nil
}

// unbound checks that no record was made for name: called where its
// binding is missing, or names a key with no record.
func (j *Journal) unbound(tx *bolt.Tx, name string) error {
	if !j.names.has(name) {
		return nil
	}
	// Perhaps: the index keeps hashes. Look at the records themselves.
	var found string
	err := tx.Bucket(bucketOps).ForEach(func(k, v []byte) error {
		if n, ok := recordName(v); ok && n == name {
			found = string(k)
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return err
	}
	if found != "" {
		return j.corruptName(name, fmt.Errorf("the record %q was made for it, and its binding is lost or names another key", found))
	}
	return nil
}

var errStop = errors.New("stop")

// corruptName returns the error for name's binding, which cannot be
// trusted: it wraps ErrJournalCorrupt and names the file and the name.
func (j *Journal) corruptName(name string, err error) error {
	return fmt.Errorf("%w: %s: binding of name %q: %v", ErrJournalCorrupt, j.path, name, err)
}

// recordName returns the name field of a record, of any version, without
// decoding the rest (or checking its checksum); ok is false if the record
// is too short to hold one.
func recordName(v []byte) (string, bool) {
	if len(v) < 2 {
		return "", false
	}
	d := wire.NewDecoder(v[2:])
	d.Take(d.Count()) // the key
	name := d.Take(d.Count())
	if d.Err() != nil {
		return "", false
	}
	return string(name), true
}

// nameIndex is the set of names the journal's records carry, kept as
// hashes: a name bound afresh is first looked for here, so that a record
// whose binding was lost is found without reading every record. A hit may
// be a collision; the records themselves decide (see Journal.unbound).
// Safe for concurrent use.
type nameIndex struct {
	seed  maphash.Seed
	mu    sync.Mutex
	count map[uint64]int32
}

func newNameIndex() *nameIndex {
	return &nameIndex{seed: maphash.MakeSeed(), count: make(map[uint64]int32)}
}

func (x *nameIndex) add(name string, n int32) {
	if name == "" {
		return
	}
	h := maphash.String(x.seed, name)
	x.mu.Lock()
	if c := x.count[h] + n; c > 0 {
		x.count[h] = c
	} else {
		delete(x.count, h)
	}
	x.mu.Unlock()
}

func (x *nameIndex) has(name string) bool {
	h := maphash.String(x.seed, name)
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.count[h] > 0
}

// loadNames fills the index from every record in the journal.
func (j *Journal) loadNames() error {
	return j.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOps).ForEach(func(_, v []byte) error {
			if n, ok := recordName(v); ok {
				j.names.add(n, 1)
			}
			return nil
		})
	})
}
