// This file holds the rule for what of a request and its answer the
// journal keeps: never a credential, in a header or in the URL.

package idem

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// secretRule decides which request headers, response headers and query
// parameters the journal keeps. A nil *secretRule withholds what the
// names alone say (see looksLikeCredential).
type secretRule struct {
	keyHeader string          // the idempotency key header: journaled as the key
	withheld  map[string]bool // canonical names never journaled
	only      map[string]bool // Options.JournalHeaders, if set
	params    map[string]bool // Options.SecretQueryParams, lower-cased
}

// newSecretRule builds the rule from the options, refusing lists that
// contradict each other.
func newSecretRule(o *Options) (*secretRule, error) {
	r := &secretRule{keyHeader: o.Header, withheld: map[string]bool{o.Header: true}}
	for _, h := range alwaysWithheld {
		r.withheld[h] = true
	}
	for _, h := range o.SecretHeaders {
		h = http.CanonicalHeaderKey(h)
		if slices.Contains(alwaysKept, h) {
			return nil, fmt.Errorf("idem: Options.SecretHeaders names %s, which the journal always keeps: a resumed request needs it to mean the same body", h)
		}
		r.withheld[h] = true
	}
	for _, p := range o.SecretQueryParams {
		if p == "" {
			return nil, fmt.Errorf("idem: Options.SecretQueryParams has an empty name")
		}
		if r.params == nil {
			r.params = make(map[string]bool, len(o.SecretQueryParams))
		}
		r.params[strings.ToLower(p)] = true
	}
	if o.JournalHeaders == nil {
		return r, nil
	}
	r.only = make(map[string]bool, len(o.JournalHeaders))
	for _, h := range o.JournalHeaders {
		h = http.CanonicalHeaderKey(h)
		if r.withheld[h] {
			return nil, fmt.Errorf("idem: Options.JournalHeaders names %s, which is never journaled (the key header, a credential, or in Options.SecretHeaders)", h)
		}
		r.only[h] = true
	}
	return r, nil
}

// keeps reports whether the journal keeps the header named name.
func (r *secretRule) keeps(name string) bool {
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
func (r *secretRule) safeHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if r.keeps(k) {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// safeResponseHeader returns a copy of a response's header h without the
// headers whose names say they carry a credential (Set-Cookie,
// X-Subject-Token, ...; see looksLikeCredential), nor those
// Options.SecretHeaders lists: the header the journal keeps of an answer.
func (r *secretRule) safeResponseHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if !looksLikeCredential(k) && (r == nil || !r.withheld[http.CanonicalHeaderKey(k)]) {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// secretParam reports whether a query parameter carries a credential: its
// name says so (api_key, access_token, signature, ...; see
// looksLikeCredential), or Options.SecretQueryParams lists it.
func (r *secretRule) secretParam(name string) bool {
	return looksLikeCredential(name) || r != nil && r.params[strings.ToLower(name)]
}

// journalURL returns u as the journal, errors and logs show it: without
// user information, and with the values of secret query parameters (see
// secretParam) left out, the parameters themselves kept in their places,
// empty: "?api_key=&amount=5". withheld reports whether anything was
// left out.
func (r *secretRule) journalURL(u *url.URL) (s string, withheld bool) {
	q, hidden := r.redactQuery(u.RawQuery)
	if u.User == nil && !hidden {
		return u.String(), false
	}
	cp := *u
	cp.User, cp.RawQuery = nil, q
	return cp.String(), true
}

// redactQuery returns a raw query with the values of its secret
// parameters emptied, and whether there were any; the rest is left byte
// for byte.
func (r *secretRule) redactQuery(raw string) (string, bool) {
	if raw == "" {
		return raw, false
	}
	var b strings.Builder
	hidden := false
	for i, part := range strings.Split(raw, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		name, _, hasValue := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if hasValue && r.secretParam(name) {
			hidden = true
			b.WriteString(part[:strings.IndexByte(part, '=')+1])
			continue
		}
		b.WriteString(part)
	}
	if !hidden {
		return raw, false
	}
	return b.String(), true
}
