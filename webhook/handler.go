// This file holds Handler, the receiver: a delivery verified, its effect
// run once per webhook-id through server.RunOnce, and the one table that
// maps how a delivery ended to its answer.

package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/idemhq/idem/server"
)

// Defaults of [Options].
const (
	// DefaultScope is the default of Options.Scope.
	DefaultScope = "webhook"
	// DefaultMaxBody is the default of Options.MaxBody: 1 MiB.
	DefaultMaxBody = 1 << 20
	// DefaultRetention is the default of Options.Run.Retention for a
	// receiver: 72 hours. Senders retry a failed delivery for more than a
	// day (Standard Webhooks' reference schedule spans about 28 hours) and
	// offer a manual resend with the same ID after that, so the 24 hours
	// of server.RunOnce would let a late retry run the effect again.
	DefaultRetention = 72 * time.Hour
)

// Options configures [Handler]. The zero value means the defaults.
type Options struct {
	// Scope is the scope the webhook IDs of this endpoint are recorded
	// under ([server.Key]): one per sender, since IDs are unique only
	// within a sender. It must be valid UTF-8 with no NUL byte
	// ([server.ValidScope]). Default "webhook" ([DefaultScope]).
	Scope string
	// MaxBody is the largest body a delivery may have, in bytes; a larger
	// one is answered 413 and nothing runs. Default 1 MiB
	// ([DefaultMaxBody]).
	MaxBody int64
	// Run configures the claim-run-record cycle (lease, wait for a
	// delivery in flight, work timeout, shutdown, observer: see
	// [server.RunOptions]). Its Retention defaults to 72 hours
	// ([DefaultRetention]), not RunOnce's 24. Its Logger defaults to
	// Logger.
	Run server.RunOptions
	// Logger receives refused deliveries (at Info, without the body or
	// signature), the handler's errors (at Error) and the store's
	// failures. Default nil: silent.
	Logger *slog.Logger
}

// HandlerFunc is the effect of a webhook message: it runs once per
// webhook-id, with the verified delivery. Its context is the one
// [server.RunOnce] gives its work: the request's values and the key it
// holds ([server.KeyFrom]), in transactional mode the store's transaction
// (pgstore.Tx), but not the connection's cancellation. A nil error
// records the message as handled; an error (or a panic) releases its
// webhook-id, so the sender's next retry runs it again.
type HandlerFunc func(ctx context.Context, m Message) error

// Handler returns an http.Handler that receives Standard Webhooks
// deliveries: it verifies each with v and runs fn once per webhook-id,
// claimed, run and recorded in store by [server.RunOnce]. The fingerprint
// is the body's SHA-256: every delivery of one message has the same body
// and ID, and its own timestamp and signature.
//
// The answers (the package documentation explains each choice):
//
//	delivery                                       answer
//	not a POST                                     405, Allow: POST
//	header missing, empty or malformed             400 ProblemHeader
//	body over Options.MaxBody                      413
//	no signature matches                           401 ProblemSignature
//	timestamp outside the tolerance, either way    401 ProblemTimestamp
//	first delivery, fn returned nil                204
//	repeat of a handled message, same body         204, Idempotent-Replayed: true
//	repeat with another body                       422 server.ProblemKeyReused
//	repeat while the first is being handled        409, Retry-After: 1
//	fn returned an error                           500 ProblemFailed
//	store failed, full or busy                     503, Retry-After
//
// Nothing runs for any answer but the first 204; every refusal is decided
// before the store is asked, except the last four rows. A panic in fn
// releases the webhook-id and goes on to net/http, which logs it and
// drops the connection; the sender retries.
//
// Handler panics if store, v or fn is nil, or Options.Scope is not valid
// (see [server.ValidScope]). The handler is safe for concurrent use.
func Handler(store server.Store, v *Verifier, fn HandlerFunc, opts Options) http.Handler {
	switch {
	case store == nil:
		panic("webhook: Handler needs a Store")
	case v == nil:
		panic("webhook: Handler needs a Verifier")
	case fn == nil:
		panic("webhook: Handler needs a HandlerFunc")
	}
	if opts.Scope == "" {
		opts.Scope = DefaultScope
	}
	if !server.ValidScope(opts.Scope) {
		panic("webhook: Options.Scope is not valid UTF-8 text")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Run.Retention <= 0 {
		opts.Run.Retention = DefaultRetention
	}
	if opts.Run.Logger == nil {
		opts.Run.Logger = opts.Logger
	}
	return &receiver{store: store, v: v, fn: fn, opts: opts}
}

type receiver struct {
	store server.Store
	v     *Verifier
	fn    HandlerFunc
	opts  Options
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		problemMethod.write(w)
		return
	}
	d, err := parseHeader(r.Header)
	if err != nil {
		rc.refuse(w, r, err, problemHeader)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rc.opts.MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			rc.refuse(w, r, err, problemTooLarge)
		} else {
			rc.refuse(w, r, err, problemUnreadable)
		}
		return
	}
	m, err := rc.v.verify(d, r.Header, body)
	if err != nil {
		if errors.Is(err, ErrSignature) {
			rc.refuse(w, r, err, problemSignature)
		} else {
			rc.refuse(w, r, err, problemTimestamp)
		}
		return
	}

	sum := sha256.Sum256(body)
	k := server.Key{Scope: rc.opts.Scope, Key: m.ID}
	res, replayed, err := server.RunOnce(r.Context(), rc.store, k, "sha256:"+hex.EncodeToString(sum[:]), func(ctx context.Context) ([]byte, error) {
		if err := rc.fn(ctx, m); err != nil {
			return nil, &handlerErr{err}
		}
		return []byte{}, nil
	}, rc.opts.Run)
	p := answerOf(res, replayed, err)
	switch {
	case p == problemFailed:
		rc.log(slog.LevelError, r, "webhook: handler failed", m.ID, err)
	case p == problemStore || p == nil && err != nil && !replayed:
		rc.log(slog.LevelError, r, "webhook: store failed", m.ID, err)
	}
	if p != nil {
		p.write(w)
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(http.StatusNoContent)
}

// answerOf is the table of a delivery that reached RunOnce, which answered
// res, replayed and err: the problem to answer with, or nil for 204.
func answerOf(res []byte, replayed bool, err error) *problem {
	var he *handlerErr
	switch {
	case err == nil:
		return nil
	case replayed:
		// A handled message whose result was not kept (ErrResultNotKept):
		// handled all the same.
		return nil
	case res != nil:
		// fn ran and succeeded, and recording it failed: the effect
		// happened. A 503 would invite a retry that runs it again once the
		// lease lapses; acknowledge it, as the middleware does.
		return nil
	case errors.Is(err, server.ErrKeyReused):
		return problemReused
	case errors.Is(err, server.ErrInFlight):
		return problemInFlight
	case errors.Is(err, server.ErrLeaseLost):
		return problemLeaseLost
	case errors.Is(err, server.ErrOverloaded):
		return problemOverloaded
	case errors.Is(err, server.ErrStoreFull):
		return problemFull
	case errors.As(err, &he):
		return problemFailed
	}
	return problemStore // a claim, begin or commit that failed
}

// handlerErr marks the handler's own error on its way through RunOnce,
// which returns it as it is, so that it is told from the store's.
type handlerErr struct{ err error }

func (e *handlerErr) Error() string { return e.err.Error() }
func (e *handlerErr) Unwrap() error { return e.err }

// refuse answers a delivery refused before the store was asked, and logs
// why.
func (rc *receiver) refuse(w http.ResponseWriter, r *http.Request, err error, p *problem) {
	if rc.opts.Logger != nil {
		rc.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "webhook: delivery refused",
			slog.Int("status", p.status), slog.String("remote", r.RemoteAddr), slog.String("err", err.Error()))
	}
	p.write(w)
}

func (rc *receiver) log(level slog.Level, r *http.Request, msg, id string, err error) {
	if rc.opts.Logger != nil {
		rc.opts.Logger.LogAttrs(r.Context(), level, msg, slog.String("scope", rc.opts.Scope),
			slog.String("webhook_id", id), slog.String("err", err.Error()))
	}
}
