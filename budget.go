// This file holds the client-wide retry budget, a token bucket.

package idem

import "sync"

// BudgetOptions configures a client's retry budget: a token bucket shared
// by every operation of one [Client] that stops a failing dependency from
// being hit by a storm of retries. Each retry takes tokens when it is
// decided on, and gives them back if it is never sent (the context ends
// during its wait, say); a first attempt never takes any. Successes put
// tokens back. When the bucket cannot pay for a
// retry, the operation stops with [ErrBudgetExhausted] (it stays pending in
// the journal) while first attempts of new operations still go out.
//
// The zero value means the documented defaults, which follow the AWS SDKs.
type BudgetOptions struct {
	// Capacity is the bucket's size, and its level when the client starts.
	// Default 500. Negative disables the budget.
	Capacity int
	// RetryCost is taken for a retry after a response or a non-timeout
	// transport error. Default 5.
	RetryCost int
	// TimeoutCost is taken for a retry after a timeout. Default 10.
	TimeoutCost int
	// SuccessRefund is put back when an operation succeeds on its first
	// attempt. An operation that succeeds after retrying puts back what its
	// last retry cost. Default 1.
	SuccessRefund int
}

func (o BudgetOptions) withDefaults() BudgetOptions {
	if o.Capacity == 0 {
		o.Capacity = 500
	}
	if o.RetryCost <= 0 {
		o.RetryCost = 5
	}
	if o.TimeoutCost <= 0 {
		o.TimeoutCost = 10
	}
	if o.SuccessRefund <= 0 {
		o.SuccessRefund = 1
	}
	return o
}

// budget is the token bucket. Safe for concurrent use.
type budget struct {
	opts   BudgetOptions
	mu     sync.Mutex
	tokens int
}

func newBudget(o BudgetOptions) *budget {
	return &budget{opts: o, tokens: o.Capacity}
}

// reserve takes the cost of one retry, a timeout's if timeout, and
// reports whether the bucket could pay for it. The reservation is the
// retry's: Cancel gives its tokens back if the retry is never sent, and
// once it is sent they are spent (Spend), to come back only with an
// answer (see call.settle).
func (b *budget) reserve(timeout bool) (reservation, bool) {
	if b.opts.Capacity < 0 {
		return reservation{}, true
	}
	cost := b.opts.RetryCost
	if timeout {
		cost = b.opts.TimeoutCost
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < cost {
		return reservation{}, false
	}
	b.tokens -= cost
	return reservation{b: b, tokens: cost}, true
}

// A reservation is the tokens one retry took from a budget, until it is
// sent or cancelled. The zero value holds nothing.
type reservation struct {
	b      *budget
	tokens int
}

// Cancel gives the reservation's tokens back, if it holds any, and
// empties it: a retry paid for and never sent costs nothing.
func (r *reservation) Cancel() {
	if r.b != nil {
		r.b.refund(r.tokens)
	}
	*r = reservation{}
}

// Spend empties the reservation, its retry sent, and returns what the
// retry cost.
func (r *reservation) Spend() int {
	n := r.tokens
	*r = reservation{}
	return n
}

// refund returns n tokens, up to capacity.
func (b *budget) refund(n int) {
	if b.opts.Capacity < 0 || n <= 0 {
		return
	}
	b.mu.Lock()
	b.tokens += min(n, b.opts.Capacity-b.tokens) // never past capacity, never overflowing
	b.mu.Unlock()
}

func (b *budget) level() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}
