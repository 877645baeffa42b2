// Package held carries, in a context, the idempotency key a piece of work
// holds, from the server package (which sets it on the work's context) to
// the client (which derives the keys of the work's own calls from it).
package held

import "context"

// Key is the key the work holds: the scope and the key within it.
type Key struct{ Scope, Key string }

// ctxKey is the context key under which a *Key is stored. The server
// package's work context answers it without an allocation.
type ctxKey struct{}

// CtxKey is the value to compare with in a Context.Value method.
var CtxKey any = ctxKey{}

// From returns the key held by the work ctx belongs to, if any.
func From(ctx context.Context) (Key, bool) {
	if k, ok := ctx.Value(ctxKey{}).(*Key); ok && k != nil {
		return *k, true
	}
	return Key{}, false
}

// With returns a copy of ctx that carries k, for work that holds k outside
// the server package's own contexts.
func With(ctx context.Context, k Key) context.Context {
	return context.WithValue(ctx, ctxKey{}, &k)
}
