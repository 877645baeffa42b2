// This file holds the rule for which request headers the journal keeps:
// never a credential.

package idem

import (
	"fmt"
	"net/http"
	"slices"
)

// alwaysWithheld are the headers the journal never keeps, whatever the
// options say: credentials by definition.
var alwaysWithheld = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// credentialWords are the words of a header or parameter name that say it
// carries a credential (X-Api-Key, X-Auth-Token, X-Hub-Signature-256,
// X-Session-Id, X-Csrf-Token, access_token, ...), and the compounds
// written as one word (Apikey, accesstoken). A name is split into words
// (see nameWords) and matched word for word, never by substring: X-Author
// and X-Signal carry no credential.
var credentialWords = map[string]bool{
	"auth": true, "authn": true, "authz": true, "authorization": true, "authentication": true, "oauth": true,
	"token": true, "secret": true, "signature": true, "sig": true, "session": true, "bearer": true,
	"password": true, "passwd": true, "pass": true, "pwd": true, "passphrase": true, "passcode": true,
	"otp": true, "pin": true, "credential": true, "credentials": true, "cookie": true,
	"jwt": true, "hmac": true, "csrf": true, "xsrf": true,
	"apikey": true, "apitoken": true, "authtoken": true, "accesstoken": true, "accesskey": true,
	"secretkey": true, "privatekey": true, "sessionid": true, "sessiontoken": true, "clientsecret": true,
}

// dataKeys are the words before "key" that make a name a key of the
// data, not a credential: X-Partition-Key, X-Routing-Key, Cache-Key. A
// "key" after any other word (X-Api-Key, Ocp-Apim-Subscription-Key), or
// alone, is taken for a credential.
var dataKeys = map[string]bool{
	"partition": true, "routing": true, "shard": true, "sort": true, "cache": true, "dedup": true,
	"deduplication": true, "idempotency": true, "correlation": true, "request": true, "message": true,
	"object": true, "primary": true, "lookup": true, "group": true, "range": true, "trace": true, "event": true,
}

// alwaysKept are the headers the journal always keeps, whatever
// Options.JournalHeaders says: without them a resumed request's body would
// not mean what it meant (its media type, its compression), and its
// fingerprint would not be the one the server took.
var alwaysKept = []string{"Content-Type", "Content-Encoding"}

// looksLikeCredential reports whether a header or query parameter name
// says it carries a credential (see credentialWords and dataKeys). The
// name is split into words, lower-cased: at every character that is not
// an ASCII letter or digit, where a lower-case letter meets an upper-case
// one (apiKey), and where letters meet digits (Sha256).
func looksLikeCredential(name string) bool {
	var bufs [2][32]byte
	w, prev := bufs[0][:0], bufs[1][:0]
	last := 0 // the kind of the last character: 0 none, 1 lower, 2 upper, 3 digit
	for i := 0; i <= len(name); i++ {
		k := 0
		if i < len(name) {
			switch c := name[i]; {
			case c >= 'a' && c <= 'z':
				k = 1
			case c >= 'A' && c <= 'Z':
				k = 2
			case c >= '0' && c <= '9':
				k = 3
			}
		}
		if k == 0 || last == 1 && k == 2 || last != 0 && (last == 3) != (k == 3) {
			if len(w) > 0 {
				if credentialWords[string(w)] || string(w) == "key" && !dataKeys[string(prev)] {
					return true
				}
				w, prev = prev[:0], w
			}
		}
		if k != 0 {
			c := name[i]
			if k == 2 {
				c += 'a' - 'A'
			}
			w = append(w, c)
		}
		last = k
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
