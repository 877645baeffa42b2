// This file holds Client.Resume, which continues the operations an
// earlier process left pending.

package idem

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Resumed is the outcome of one operation continued by [Client.Resume].
type Resumed struct {
	// Operation is the journal's record as it was when Resume found it;
	// for a record that cannot be read, only its Key.
	Operation *Operation
	// Response is the final answer, or nil if Err is set.
	Response *Response
	// Err says why there is no final answer: an *Error wrapping
	// ErrExpired for an operation past the server's key retention (it was
	// not sent), ErrAbandoned or ErrNoOperation for one abandoned (and
	// perhaps purged) since Resume listed it (it was not sent), or any
	// error Do can return (it stays pending).
	Err error
}

// Resume continues every pending operation in the journal, typically once
// after a restart: each is sent again with its journaled key, method, URL,
// headers and exact body, with Options.PrepareRequest re-applying
// credentials. At most Options.ResumeConcurrency run at once, their starts
// spread over Options.ResumeJitter. An operation older than
// Options.KeyRetention is not sent: it is marked Expired and reported, since
// the server may have forgotten its key and could execute it twice.
//
// Resume returns one Resumed per pending operation, oldest first, once all
// are done or ctx is cancelled (the rest then carry ctx's error and stay
// pending). A pending operation whose record cannot be read (see
// Journal.Pending) is never sent; it is reported after the others, with
// only its key known and an Err that wraps ErrJournalCorrupt and names the
// file and the key, and the others resume all the same. It needs a
// journal (ErrNoJournal). It is safe to call while other calls run: an
// operation that another call finishes first is answered from the
// journal. Options.OnResumed hears of each operation as it is done.
func (c *Client) Resume(ctx context.Context) ([]Resumed, error) {
	if c.journal == nil {
		return nil, ErrNoJournal
	}
	ops, bad, err := c.journal.pending()
	if err != nil {
		return nil, err
	}
	out := make([]Resumed, len(ops), len(ops)+len(bad))
	for _, u := range bad {
		op := &Operation{Key: u.key}
		out = append(out, Resumed{Operation: op, Err: op.error(u.err, 0)})
		if f := c.opts.OnResumed; f != nil {
			f(out[len(out)-1])
		}
	}
	sem := make(chan struct{}, c.opts.ResumeConcurrency)
	var wg sync.WaitGroup
	for i, op := range ops {
		out[i].Operation = op
		// An operation past its retention is expired by do, under the
		// key's lock and from the record as it is then: a call finishing
		// it meanwhile must not be overwritten.
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].Response, out[i].Err = c.resume(ctx, op, sem)
			if f := c.opts.OnResumed; f != nil {
				f(out[i])
			}
		}()
	}
	wg.Wait()
	return out, nil
}

func (c *Client) resume(ctx context.Context, op *Operation, sem chan struct{}) (*Response, error) {
	if c.opts.ResumeJitter > 0 {
		t := time.NewTimer(rand.N(c.opts.ResumeJitter))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, op.error(ctx.Err(), 0)
		}
	}
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	case <-ctx.Done():
		return nil, op.error(ctx.Err(), 0)
	}
	cl := &call{c: c, origin: fromResume, own: *op}
	return c.do(ctx, cl, &cl.own, op.Header)
}
