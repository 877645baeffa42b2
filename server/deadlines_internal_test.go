package server

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestDeadlinesArmedOutOfOrder: deadlines armed with clock readings out
// of order (two requests that read the clock, then arm in the other
// order) are queued in the order of their deadlines; each is cancelled at
// its deadline or, if it went in before the head the timer was set for,
// with that head; a stopped one is never cancelled, and stop reports
// which were. On a fake clock.
func TestDeadlinesArmedOutOfOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("limit")
		q := newDeadlines(10*time.Second, cause)
		t0 := time.Now()
		var ds [4]deadline
		ctxs := make([]context.Context, len(ds))
		cancels := make([]context.CancelCauseFunc, len(ds))
		for i := range ds {
			ctxs[i], cancels[i] = context.WithCancelCause(context.Background())
		}
		// Armed in the order 1, 0, 3, 2, read at 1 s, 0 s, 3 s, 2 s.
		for _, i := range []int{1, 0, 3, 2} {
			q.arm(&ds[i], t0.Add(time.Duration(i)*time.Second), 0, nil, cancels[i])
		}
		var order []*deadline
		for d := q.head; d != nil; d = d.next {
			order = append(order, d)
		}
		want := []*deadline{&ds[0], &ds[1], &ds[2], &ds[3]}
		for i := range want {
			if i >= len(order) || order[i] != want[i] {
				t.Fatalf("queue order %v, want %v", order, want)
			}
		}
		if q.tail != &ds[3] || ds[3].next != nil || ds[0].prev != nil {
			t.Fatal("head, tail or ends not linked")
		}
		if !q.stop(&ds[2]) {
			t.Fatal("stop before the deadline reports false")
		}
		// The timer was set for deadline 1 (armed first, at 11 s).
		time.Sleep(11 * time.Second)
		synctest.Wait()
		for i, want := range []error{cause, cause, nil, nil} {
			if got := context.Cause(ctxs[i]); !errors.Is(got, want) && !(want == nil && got == nil) {
				t.Errorf("deadline %d at 11 s: cause %v, want %v", i, got, want)
			}
		}
		if q.stop(&ds[0]) || q.stop(&ds[1]) {
			t.Error("stop after the deadline reports true")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !errors.Is(context.Cause(ctxs[3]), cause) || ctxs[2].Err() != nil {
			t.Errorf("at 13 s: deadline 3 %v (want cancelled), stopped 2 %v (want live)", context.Cause(ctxs[3]), ctxs[2].Err())
		}
		q.mu.Lock()
		empty := q.head == nil && q.tail == nil && q.timer == nil
		q.mu.Unlock()
		if !empty {
			t.Error("the queue is not empty, or its timer did not lapse")
		}
		for _, c := range cancels {
			c(nil)
		}
	})
}
