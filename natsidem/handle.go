// This file holds Handle, a message's effect run once through
// server.RunOnce and the message settled by its outcome; Handler, the same
// for a jetstream.Consume callback; and the one table (dispose) from the
// outcome to the settlement.

package natsidem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/server"
)

// ErrPermanent marks an error of the work that no redelivery can mend (a
// message that does not parse, an account that does not exist): the
// work wraps it (fmt.Errorf("%w: ...", natsidem.ErrPermanent)) and
// [Handle] terminates the message instead of asking for it again.
var ErrPermanent = errors.New("natsidem: permanent failure")

// Defaults of [Options].
const (
	// DefaultRetryDelay is the default of Options.RetryDelay.
	DefaultRetryDelay = time.Second
	// DefaultMaxRetryDelay is the default of Options.MaxRetryDelay.
	DefaultMaxRetryDelay = time.Minute
	// DefaultInFlightDelay is the default of Options.InFlightDelay.
	DefaultInFlightDelay = time.Second
)

// Options configures [Handle] and [Handler]. The zero value means the
// defaults.
type Options struct {
	// Scope is the scope of the messages' keys (see [KeyOf]). Default "":
	// "nats/" and each message's stream name.
	Scope string
	// Run configures the claim-run-record cycle (lease, retention, work
	// timeout, shutdown, observer: see [server.RunOptions]). Its Logger
	// defaults to Logger. Keep Retention (default 24 h) longer than a
	// message can wait in the stream before its last redelivery.
	Run server.RunOptions
	// RetryDelay is the wait before the first redelivery of a message
	// whose work failed with a retryable error (or whose store failed);
	// it doubles with each delivery (the metadata's NumDelivered), up to
	// MaxRetryDelay. Default 1 s ([DefaultRetryDelay]).
	RetryDelay time.Duration
	// MaxRetryDelay caps RetryDelay's doubling. Default 1 minute
	// ([DefaultMaxRetryDelay]).
	MaxRetryDelay time.Duration
	// InFlightDelay is the wait before the redelivery of a message whose
	// key another delivery holds (server.ErrInFlight, server.ErrLeaseLost).
	// With pgstore in transactional mode a crashed holder's key is free as
	// soon as its connection closes; with a lease store it stays held
	// until the lease lapses (30 s by default), so set it near a third of
	// the lease, or the consumer's MaxDeliver high enough. Default 1 s
	// ([DefaultInFlightDelay]).
	InFlightDelay time.Duration
	// Logger receives, from [Handler], every delivery that was not acked
	// and every settlement that failed. Default nil: silent.
	Logger *slog.Logger
}

// Work is the effect of one message. Its context is the one
// [server.RunOnce] gives its work: the caller's values and the key it
// holds ([server.KeyFrom]), in transactional mode the store's transaction
// (pgstore.Tx), but not the caller's cancellation. A nil error records the
// message as handled; an error releases its key (in transactional mode
// its writes roll back) and the message is redelivered, or terminated if
// the error wraps [ErrPermanent].
type Work func(ctx context.Context, msg jetstream.Msg) error

// Action is how a message was settled.
type Action uint8

// The settlements.
const (
	// Ack: the outcome is recorded (or was recorded by an earlier
	// delivery, and replayed): the message is done.
	Ack Action = iota + 1
	// Nak: redeliver the message after the Disposition's Delay
	// (NakWithDelay; Nak if the Delay is zero).
	Nak
	// Term: never redeliver the message.
	Term
)

func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Nak:
		return "nak"
	case Term:
		return "term"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Disposition is what [Handle] did with a message, and why.
type Disposition struct {
	Action Action
	// Delay is a Nak's redelivery delay.
	Delay time.Duration
	// Replayed reports that the work did not run: an earlier delivery's
	// outcome was recorded.
	Replayed bool
	// Err is why the message was not acked, or, with Ack, the failure to
	// record an outcome whose work ran all the same (see Handle). Nil for
	// a plain Ack.
	Err error
}

// Handle runs work for msg at most once per key ([KeyOf]), through
// [server.RunOnce] on store, and then settles msg by the outcome; it
// returns the settlement, and the error of the settling call itself (the
// message is then redelivered after the consumer's AckWait, and the
// redelivery replays a recorded outcome).
//
// The message is acked only once its outcome is recorded, so a consumer
// that dies at any point before leaves it to be redelivered, and one that
// dies after leaves a record that the redelivery replays: with pgstore in
// transactional mode, whose record commits with the work's writes, the
// effect happens exactly once. The settlements:
//
//	outcome                                        settlement
//	work ran and its outcome was recorded          Ack
//	an earlier delivery's outcome was recorded     Ack, Replayed
//	work ran, and recording its outcome failed     Ack, with Err (see below)
//	work failed (or panicked), retryable           Nak, RetryDelay doubling with NumDelivered
//	work failed with ErrPermanent                  Term
//	the key is another delivery's (in flight,      Nak, InFlightDelay
//	  or taken over: ErrInFlight, ErrLeaseLost)
//	store failed, full, or too busy to start       Nak, RetryDelay doubling
//	the Nats-Msg-Id was used with another          Term, server.ErrKeyReused
//	  subject or body
//	no JetStream metadata                          Term, ErrNotJetStream (the Term fails too)
//
// Where the work ran outside the store's transaction and recording its
// outcome then failed, the work has happened: a redelivery, once the
// lease lapsed, would run it again, so the message is acked (as the
// middleware answers such a request) and Disposition.Err says why.
// A panic in work releases the key, naks the message (RetryDelay) and
// goes on up.
//
// Handle does not return before the outcome is recorded: ctx's
// cancellation ends a wait for the key (RunOptions.Wait), never the work
// once it holds the key (see RunOnce). Handle is safe for concurrent use;
// a nil ctx panics.
func Handle(ctx context.Context, store server.Store, msg jetstream.Msg, work Work, opts Options) (Disposition, error) {
	k, err := KeyOf(msg, opts.Scope)
	if err != nil {
		d := Disposition{Action: Term, Err: err}
		return d, settle(msg, d)
	}
	if opts.Run.Logger == nil {
		opts.Run.Logger = opts.Logger
	}
	var delivered uint64
	if meta, err := msg.Metadata(); err == nil {
		delivered = meta.NumDelivered
	}
	panicked := true
	defer func() {
		if panicked {
			settle(msg, dispose(nil, false, errors.New("natsidem: work panicked"), delivered, opts))
		}
	}()
	res, replayed, err := server.RunOnce(ctx, store, k, fingerprint(msg), func(ctx context.Context) ([]byte, error) {
		if err := work(ctx, msg); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}, opts.Run)
	panicked = false
	d := dispose(res, replayed, err, delivered, opts)
	return d, settle(msg, d)
}

// dispose is the table: the settlement of a message whose RunOnce
// answered res, replayed and err, on its delivered-th delivery.
func dispose(res []byte, replayed bool, err error, delivered uint64, opts Options) Disposition {
	switch {
	case err == nil:
		return Disposition{Action: Ack, Replayed: replayed}
	case replayed:
		// ErrResultNotKept: the work ran; only its (empty) result is gone.
		return Disposition{Action: Ack, Replayed: true}
	case res != nil:
		return Disposition{Action: Ack, Err: err} // ran, not recorded: see Handle
	case errors.Is(err, server.ErrKeyReused), errors.Is(err, server.ErrInvalidScope):
		return Disposition{Action: Term, Err: err}
	case errors.Is(err, server.ErrInFlight), errors.Is(err, server.ErrLeaseLost):
		return Disposition{Action: Nak, Delay: orDefault(opts.InFlightDelay, DefaultInFlightDelay), Err: err}
	case errors.Is(err, ErrPermanent):
		return Disposition{Action: Term, Err: err}
	}
	return Disposition{Action: Nak, Delay: retryDelay(opts, delivered), Err: err}
}

// retryDelay is RetryDelay doubled for each delivery after the first,
// capped at MaxRetryDelay: base * 2^(delivered-1), so with the defaults
//
//	delivery   1    2    3    4    5     6     7 and later
//	delay      1s   2s   4s   8s   16s   32s   1m
func retryDelay(opts Options, delivered uint64) time.Duration {
	base := orDefault(opts.RetryDelay, DefaultRetryDelay)
	ceiling := max(orDefault(opts.MaxRetryDelay, DefaultMaxRetryDelay), base)
	d := base
	for i := uint64(1); i < delivered && d < ceiling; i++ {
		d *= 2 // at most ~40 doublings from 1 ns to any ceiling: no overflow
	}
	return min(d, ceiling)
}

// settle settles msg as d says.
func settle(msg jetstream.Msg, d Disposition) error {
	var err error
	switch d.Action {
	case Ack:
		err = msg.Ack()
	case Nak:
		if d.Delay > 0 {
			err = msg.NakWithDelay(d.Delay)
		} else {
			err = msg.Nak()
		}
	case Term:
		err = msg.Term()
	}
	if err != nil {
		return fmt.Errorf("natsidem: %s: %w", d.Action, err)
	}
	return nil
}

// Handler returns a jetstream.MessageHandler, for Consumer.Consume, that
// runs each message through [Handle] with a background context (end
// running work with Options.Run.Shutdown) and logs to Options.Logger every
// message it did not ack and every settlement that failed.
func Handler(store server.Store, work Work, opts Options) jetstream.MessageHandler {
	return func(msg jetstream.Msg) {
		d, err := Handle(context.Background(), store, msg, work, opts)
		if opts.Logger == nil {
			return
		}
		if d.Action != Ack || d.Err != nil {
			opts.Logger.Warn("natsidem: message not done", "action", d.Action.String(), "delay", d.Delay, "subject", msg.Subject(), "err", d.Err)
		}
		if err != nil {
			opts.Logger.Warn("natsidem: settle failed", "subject", msg.Subject(), "err", err)
		}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
