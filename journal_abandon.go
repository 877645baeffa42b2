// This file holds Journal.Abandon, which gives an operation up on purpose,
// so that it is never sent again.

package idem

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Abandon gives up the operation with key on purpose: a pending or refused
// operation becomes Abandoned, durably, before Abandon returns. Resume
// never sends it again, and a call with its key gets ErrAbandoned. The
// record is kept, not deleted, so that what was given up stays on record
// until it is purged (JournalOptions.PurgeAfter).
//
// It is for an operation reconciled by other means, as a tool's "forget".
// A call of this process that is sending the operation, from any Client
// of this journal, is not cut short: Abandon waits for its attempt in
// flight to end (at most Options.AttemptTimeout). If that attempt is the
// operation's final answer, the call records it, and Abandon fails, the
// operation being finished. Otherwise Abandon comes in while the call
// waits to retry, and the call stops before its next attempt with
// ErrAbandoned. Once Abandon returns nil, no attempt of the operation
// starts in this process. Abandon must not be called from a hook of a
// call with the same key (PrepareRequest, OnAttempt, an Observer's
// function): the call holds the key while its hooks run.
//
// Abandon returns the record as abandoned; abandoning an abandoned
// operation again changes nothing and returns it too, so a "forget" run
// twice succeeds twice. It fails with an error wrapping ErrNoOperation if
// the journal holds no such key, ErrJournalCorrupt if its record cannot be
// read, and an error naming the state if the operation is completed,
// failed or expired.
func (j *Journal) Abandon(key string) (*Operation, error) {
	lock, owned := j.locks.hold(key)
	defer j.locks.release(key, lock, owned)
	var abandoned *Operation
	var refusal error // why the record cannot be abandoned: no write
	err := j.submit(true, nil, func(tx *bolt.Tx) error {
		abandoned, refusal = nil, nil // the closure may run twice (see submit)
		op, err := j.read(tx, key)
		switch {
		case err != nil:
			refusal = err
			return nil
		case op == nil:
			refusal = fmt.Errorf("%w: %q in %s", ErrNoOperation, key, j.path)
			return nil
		case op.State == Abandoned:
			abandoned = op // done already: nothing to write
			return nil
		}
		s, ok := transition(op.State, evAbandon, fromCaller)
		if !ok {
			refusal = fmt.Errorf("idem: operation %q is %s; only a pending or refused operation can be abandoned", key, op.State)
			return nil
		}
		op.State, op.UpdatedAt = s.to, time.Now()
		if err := opsBucket(tx).Put([]byte(key), op.encode(nil)); err != nil {
			return err
		}
		abandoned = op
		return tx.Bucket(bucketPending).Delete([]byte(key))
	})
	if err == nil {
		err = refusal
	}
	if err != nil {
		return nil, err
	}
	return abandoned, nil
}
