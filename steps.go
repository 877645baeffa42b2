// This file holds the keys of calls made from inside work that holds a
// key itself (a handler behind the server package's Middleware, or
// RunOnce's work): derived from the held key and the call's step, so that
// every run of the same request sends the provider the same key.

package idem

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"net/http"

	"github.com/oklog/ulid/v2"

	"github.com/idemhq/idem/internal/held"
)

type stepKey struct{}

// Step returns a copy of ctx that names the step of the work a call made
// with it belongs to, such as "charge" or "refund-fee": the name a key for
// the call is derived from (see [Client.StepKey]). A handler that calls
// the same endpoint twice names the two calls apart; one that calls it
// once may leave the step out.
func Step(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, stepKey{}, name)
}

// StepKey returns the idempotency key for a call made with ctx from inside
// work that holds a key itself: a handler behind the server package's
// Middleware, or the work of its RunOnce, whose context carries the
// (scope, key) it holds (server.KeyFrom). It reports false, and no key,
// for any other context.
//
// The key is derived from the held scope and key and the step, as [Step]
// names it in ctx; without one, the step is "METHOD /path" of req (neither
// its query nor its scheme, host and port: a failover to another address of
// the provider keeps the key), or "" when req is nil. It is deterministic: every run of the
// same request (a retry after a lost answer, a takeover after a crash, a
// re-run after the handler's own transaction rolled back) derives the
// same key, so the provider replays instead of acting twice. Distinct
// steps give distinct keys. The derivation is one-way (SHA-256, or
// HMAC-SHA-256 keyed with Options.DeriveSecret), so the provider never
// learns the held key; with a secret, nobody without it can compute the
// key either. The key is formatted as a UUID (version 8), or as a
// 26-character ULID-shaped string when Options.MaxKeyLen is below 36.
//
// [Client.Do] uses StepKey itself for a request that carries no key of its
// own; StepKey is for calls made through another SDK that takes a key as
// a parameter.
func (c *Client) StepKey(ctx context.Context, req *http.Request) (string, bool) {
	k, ok := held.From(ctx)
	if !ok {
		return "", false
	}
	step, named := ctx.Value(stepKey{}).(string)
	if !named && req != nil {
		m := req.Method
		if m == "" {
			m = http.MethodGet
		}
		step = m + " " + req.URL.EscapedPath()
	}
	var h hash.Hash
	if c.opts.DeriveSecret != nil {
		h = hmac.New(sha256.New, c.opts.DeriveSecret)
	} else {
		h = sha256.New()
	}
	sum := deriveSum(h, "idem/step/v1", k.Scope, []string{k.Key, step})
	if c.opts.MaxKeyLen < 36 {
		return ulid.ULID(sum).String(), true
	}
	return uuidKey(sum), true
}

// newKey returns the key for req, which carries none: derived from the key
// held by the work req's context belongs to (StepKey), or minted, in
// which case minted is true.
func (c *Client) newKey(req *http.Request) (key string, minted bool) {
	if k, ok := c.StepKey(req.Context(), req); ok {
		return k, false
	}
	return c.opts.KeyFormat.mint(), true
}
