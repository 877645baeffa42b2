// This file holds the client's side of keys carried in a JSON body field
// (Options.BodyKey, or one call's WithBodyKey): reading the caller's key,
// or writing one in.

package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemhq/idem/internal/bodykey"
)

// ErrInvalidBodyKey: the path given to WithBodyKey names no field: it is
// empty, has an empty step or more than 32, or a byte that is not
// printable ASCII.
var ErrInvalidBodyKey = errors.New("idem: invalid body key path")

// bodyKeyCtx is the context key of WithBodyKey's value, a *callBodyKey.
type bodyKeyCtx struct{}

// callBodyKey is one call's body key, parsed once.
type callBodyKey struct {
	path bodykey.Path
	text string
	err  error
}

// WithBodyKey returns a copy of ctx with which a call (Do, DoNamed, or a
// request sent through Client.Transport) carries its key in the JSON body
// field path names, in place of Options.BodyKey for that call: for APIs
// whose operations name their key fields each their own way (AWS's
// ClientToken beside IdempotencyToken). path is written as Options.BodyKey
// is (a member name, or names joined by dots for a nested field), and the
// field is read, or written with a fresh key, as Options.BodyKey's is.
// If the Client sends keys in a header (Options.Header), the header is
// sent too: the journal keeps the body with its key in it but not the
// field's name, so a resumed operation is sent the same way, header and
// all. A path that names no field makes the call fail with an *Error
// wrapping ErrInvalidBodyKey, nothing sent. A later call under the same
// key needs the same path to be the same request.
func WithBodyKey(ctx context.Context, path string) context.Context {
	v := &callBodyKey{text: path}
	if v.path, v.err = bodykey.ParsePath(path); v.err != nil {
		v.err = fmt.Errorf("%w %q: %v", ErrInvalidBodyKey, path, v.err)
	}
	return context.WithValue(ctx, bodyKeyCtx{}, v)
}

// bodyKeyFor returns the body key of a call made with ctx, and its text:
// the call's (WithBodyKey), or Options.BodyKey, or nil for a key in the
// header.
func (c *Client) bodyKeyFor(ctx context.Context) (bodykey.Path, string, error) {
	if v, ok := ctx.Value(bodyKeyCtx{}).(*callBodyKey); ok {
		return v.path, v.text, v.err
	}
	return c.bodyKey, c.opts.BodyKey, nil
}

// bodyKeyPath returns the path bodyKeyFor does.
func (c *Client) bodyKeyPath(ctx context.Context) bodykey.Path {
	p, _, _ := c.bodyKeyFor(ctx)
	return p
}

// keyInBody is keyInBodyAt with the Client's Options.BodyKey.
func (c *Client) keyInBody(req *http.Request, op *Operation, name string, body []byte) ([]byte, error) {
	return c.keyInBodyAt(req, op, name, body, c.bodyKey, c.opts.BodyKey)
}

// keyInBodyAt sets op.Key from the body's key field, at path (whose text
// is field), and returns the body to send: the caller's own, if its field
// holds a key (DoNamed: the name's); or the body with a fresh key, or the
// name's, written into the field. A body that is no JSON object, a field
// that is ambiguous or holds no string, or an invalid key in it, is
// refused.
func (c *Client) keyInBodyAt(req *http.Request, op *Operation, name string, body []byte, path bodykey.Path, field string) ([]byte, error) {
	k, found, err := bodykey.Get(body, path)
	if err != nil {
		return nil, fmt.Errorf("%v (Options.BodyKey or WithBodyKey %q)", err, field)
	}
	if found {
		if err := ValidateKey(k); err != nil {
			return nil, err
		}
	}
	switch {
	case name != "":
		bound, err := c.NamedKey(name)
		if err != nil {
			return nil, err
		}
		if found && k != bound {
			return nil, fmt.Errorf("idem: the body's %s holds the key %q, not %q, the key bound to %q", field, k, bound, name)
		}
		op.Key = bound
	case found:
		op.Key = k
	default:
		op.Key, op.minted = c.newKey(req)
	}
	if found {
		return body, nil
	}
	return bodykey.Put(body, path, op.Key)
}
