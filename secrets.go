// This file holds the rule for which request headers the journal keeps:
// never a credential.

package idem

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// alwaysWithheld are the headers the journal never keeps, whatever the
// options say: credentials by definition.
var alwaysWithheld = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// credentialWords are the parts of a header name that say it carries a
// credential (X-Api-Key, X-Auth-Token, X-Hub-Signature-256,
// Ocp-Apim-Subscription-Key, X-Session-Id, X-CSRF-Token, ...). A header
// whose lower-cased name contains one is withheld by default.
var credentialWords = []string{
	"auth", "token", "secret", "signature", "session", "password", "passwd",
	"passphrase", "credential", "cookie", "key", "jwt", "hmac", "csrf", "xsrf",
}

// alwaysKept are the headers the journal always keeps, whatever
// Options.JournalHeaders says: without them a resumed request's body would
// not mean what it meant (its media type, its compression), and its
// fingerprint would not be the one the server took.
var alwaysKept = []string{"Content-Type", "Content-Encoding"}

// looksLikeCredential reports whether a header name says it carries a
// credential (see credentialWords).
func looksLikeCredential(name string) bool {
	name = strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// headerRule decides which request headers the journal keeps.
type headerRule struct {
	keyHeader string          // the idempotency key header: journaled as the key
	withheld  map[string]bool // canonical names never journaled
	only      map[string]bool // Options.JournalHeaders, if set
}

// newHeaderRule builds the rule from the options, refusing lists that
// contradict each other.
func newHeaderRule(o *Options) (headerRule, error) {
	r := headerRule{keyHeader: o.Header, withheld: map[string]bool{o.Header: true}}
	for _, h := range alwaysWithheld {
		r.withheld[h] = true
	}
	for _, h := range o.SecretHeaders {
		h = http.CanonicalHeaderKey(h)
		if slices.Contains(alwaysKept, h) {
			return r, fmt.Errorf("idem: Options.SecretHeaders names %s, which the journal always keeps: a resumed request needs it to mean the same body", h)
		}
		r.withheld[h] = true
	}
	if o.JournalHeaders == nil {
		return r, nil
	}
	r.only = make(map[string]bool, len(o.JournalHeaders))
	for _, h := range o.JournalHeaders {
		h = http.CanonicalHeaderKey(h)
		if r.withheld[h] {
			return r, fmt.Errorf("idem: Options.JournalHeaders names %s, which is never journaled (the key header, a credential, or in Options.SecretHeaders)", h)
		}
		r.only[h] = true
	}
	return r, nil
}

// keeps reports whether the journal keeps the header named name.
func (r *headerRule) keeps(name string) bool {
	name = http.CanonicalHeaderKey(name)
	switch {
	case r.withheld[name]:
		return false
	case slices.Contains(alwaysKept, name):
		return true
	case r.only != nil:
		return r.only[name]
	}
	return !looksLikeCredential(name)
}

// safeHeader returns a copy of h with only the headers the journal keeps.
func (r *headerRule) safeHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if r.keeps(k) {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}
