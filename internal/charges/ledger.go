package charges

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/idemhq/idem/server"
)

// ledger keeps charges. add writes one in the request's unit of work: it
// counts once the work commits, together with the stored response, and
// not at all if the work rolls back (the handler failed, or its lease was
// taken over).
type ledger interface {
	add(ctx context.Context, c Charge) error
	list(ctx context.Context, client string) ([]Charge, error)
}

// memLedger is the in-memory ledger. Its unit of work is a memWork, which
// memTx begins for each first execution.
type memLedger struct {
	// commits is held shared by each memWork.Commit from before its
	// fenced Complete until its charges are appended, and exclusively by
	// list: a list never misses the charge of an outcome the store has
	// already recorded (and may be replaying), while commits, which may
	// wait on a networked store, run side by side.
	commits sync.RWMutex
	mu      sync.Mutex // guards charges
	charges []Charge
}

func (l *memLedger) add(ctx context.Context, c Charge) error {
	if w, ok := ctx.Value(memWorkKey{}).(*memWork); ok {
		w.pending = append(w.pending, c)
		return nil
	}
	l.mu.Lock() // a request without a key, let through unprotected
	l.charges = append(l.charges, c)
	l.mu.Unlock()
	return nil
}

func (l *memLedger) list(_ context.Context, client string) ([]Charge, error) {
	l.commits.Lock()
	defer l.commits.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Charge
	for _, c := range l.charges {
		if c.Client == client {
			out = append(out, c)
		}
	}
	return slices.Clip(out), nil
}

// memTx makes any server.Store transactional for the in-memory ledger: a
// work's charges are appended once the store's fenced Complete has
// recorded its outcome, so a worker whose lease was taken over adds
// nothing, as a rolled-back PostgreSQL transaction would. It begins its
// own units of work: the store's own (a Transactor's or WorkClaimer's)
// are not used.
//
// A Complete that fails adds nothing, though a store that lost Complete's
// answer (a networked store, say) may have recorded the outcome all the
// same: that charge is then missing from the ledger while the store
// replays it. No transaction spans a ledger and a store it does not live
// in; with memstore a Complete has no answer to lose.
type memTx struct {
	server.Store
	ledger *memLedger
}

// StoreSystem names the wrapped store's system, so that observers see
// the store the records are kept in.
func (t *memTx) StoreSystem() string {
	if n, ok := t.Store.(server.SystemNamer); ok {
		return n.StoreSystem()
	}
	return ""
}

type memWorkKey struct{}

// memWork is one first execution's unit of work. It ends once: after a
// Commit or a Rollback, a Commit fails and a Rollback does nothing.
type memWork struct {
	tx      *memTx
	k       server.Key
	token   string
	pending []Charge // one goroutine, the handler's, appends
	ended   bool
}

var errWorkEnded = errors.New("charges: the unit of work has ended")

func (t *memTx) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	w := &memWork{tx: t, k: k, token: token}
	return context.WithValue(ctx, memWorkKey{}, w), w, nil
}

func (w *memWork) Commit(ctx context.Context, resp server.StoredResponse, retention time.Duration) error {
	if w.ended {
		return errWorkEnded
	}
	w.ended = true
	l := w.tx.ledger
	l.commits.RLock()
	defer l.commits.RUnlock()
	if err := w.tx.Complete(ctx, w.k, w.token, resp, retention); err != nil {
		return err // the lease was lost: the charges go with the work
	}
	l.mu.Lock()
	l.charges = append(l.charges, w.pending...)
	l.mu.Unlock()
	return nil
}

func (w *memWork) Rollback(context.Context) error {
	w.ended, w.pending = true, nil
	return nil
}
