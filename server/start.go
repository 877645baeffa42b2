// This file holds the start of the work under an acquired key.

package server

import (
	"context"
	"errors"
)

// start starts the work on k, acquired in ans, under a (zero before; its
// user embeds it to save allocations, and defers a.end right after start
// returns, whatever it returns). A lease claim's renewal begins at once,
// so the lease is kept while the store's unit of work begins
// (Transactor.BeginWork).
//
// start returns the context the work runs with: parent's values (and the
// unit of work's), cancelled when parent is, when a ends, or with cause
// ErrLeaseLost when renewal finds the key taken over. If the work cannot
// start it returns why: ErrLeaseLost if the lease was lost meanwhile, or
// BeginWork's error (the store's, or ctx's).
func (cl *claimer) start(a *attempt, parent context.Context, k Key, ans answer) (context.Context, error) {
	a.store, a.key, a.token, a.lease, a.renewEvery, a.log = cl.store, k, ans.Token, cl.lease, cl.renewEvery, cl.log
	a.detached.Context = parent
	var ctx context.Context
	if ans.inWork {
		a.inWork, a.work = true, ans.work
		ctx, a.cancel = context.WithCancelCause(ans.ctx)
	} else {
		ctx, a.cancel = context.WithCancelCause(parent)
		a.startRenewal(cl.renewer)
	}
	if a.inWork || cl.tx == nil {
		return ctx, nil
	}
	wctx, work, err := cl.tx.BeginWork(ctx, k, a.token)
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrLeaseLost) {
			return nil, ErrLeaseLost
		}
		return nil, err
	}
	a.work = work // a nil Work: the work runs outside the store
	return wctx, nil
}
