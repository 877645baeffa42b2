// This file holds the client's side of keys carried in a JSON body field
// (Options.BodyKey): reading the caller's key, or writing one in.

package idem

import (
	"fmt"
	"net/http"

	"github.com/idemhq/idem/internal/bodykey"
)

// keyInBody sets op.Key from the body's key field and returns the body to
// send: the caller's own, if its field holds a key (DoNamed: the name's);
// or the body with a fresh key, or the name's, written into the field. A
// body that is no JSON object, a field that is ambiguous or holds no
// string, or an invalid key in it, is refused.
func (c *Client) keyInBody(req *http.Request, op *Operation, name string, body []byte) ([]byte, error) {
	k, found, err := bodykey.Get(body, c.bodyKey)
	if err != nil {
		return nil, fmt.Errorf("%v (Options.BodyKey %q)", err, c.opts.BodyKey)
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
			return nil, fmt.Errorf("idem: the body's %s holds the key %q, not %q, the key bound to %q", c.opts.BodyKey, k, bound, name)
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
	return bodykey.Put(body, c.bodyKey, op.Key)
}
