// This file holds Client.KeyHeader, for packages that build idem's
// requests for other protocols (grpcidem) and must put the key where the
// client reads it.

package idem

// KeyHeader returns the canonical name of the header the client reads a
// request's idempotency key from and sends it in (Options.Header, by
// default "Idempotency-Key"), or "" when Options.BodyKey puts the key in
// the JSON body instead.
func (c *Client) KeyHeader() string { return c.opts.Header }
