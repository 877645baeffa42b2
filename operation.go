// This file holds Operation and Result, an operation as the journal
// holds it and its final response.

package idem

import (
	"bytes"
	"net/http"
	"net/url"
	"time"
)

// Operation is one operation as the journal holds it.
type Operation struct {
	Key string
	// Name is the application name bound to Key with [Client.NamedKey], if
	// the key came from there.
	Name   string
	Method string
	// URL is the request's URL without its credentials, which are never
	// journaled: no user information, and the query parameters that carry
	// credentials (api_key, access_token, signature, ...; see
	// Options.SecretQueryParams) kept in their places with their values
	// left out ("?api_key=&amount=5"). PrepareRequest puts them back on a
	// resumed operation.
	URL string
	// Host is the request's Host override, if it had one; empty means the
	// URL's host.
	Host string
	// Header holds the request headers that are safe to store: never
	// Authorization, Cookie, Proxy-Authorization, the idempotency key
	// header itself, a header whose name says it carries a credential, or
	// one listed in Options.SecretHeaders (see there, and
	// Options.JournalHeaders).
	Header http.Header
	// Body is the exact request body sent on every attempt.
	Body []byte
	// Fingerprint is SHA-256 over method, URL and body (with
	// Options.BodyKey, the body without the key's field).
	Fingerprint [32]byte
	State       State
	CreatedAt   time.Time
	// ExpiresAt is CreatedAt plus the server's key retention: after it the
	// operation is not sent again.
	ExpiresAt time.Time
	UpdatedAt time.Time
	// Attempts counts the attempts of the process that finished it.
	Attempts int
	// Response is the final response, for Completed, Failed and Refused
	// operations.
	Response *StoredResponse

	u        *url.URL    // the live request's URL, until URL is needed
	secrets  *secretRule // the client's, for URL
	minted   bool        // Key was minted for this call, so no record can hold it
	whole    [32]byte    // with a body key: the fingerprint of the whole body
	hasWhole bool
	// With secret query parameters in u: u without user information, the
	// secrets in it, and the fingerprint taken over it, which journals
	// written before the parameters were withheld hold.
	unredacted   string
	unredactedFP [32]byte
}

// clone returns a copy of op that shares no memory with it.
func (op *Operation) clone() *Operation {
	cp := *op
	cp.Header = op.Header.Clone()
	cp.Body = bytes.Clone(op.Body)
	if op.Response != nil {
		r := *op.Response
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		cp.Response = &r
	}
	return &cp
}

// url returns the operation's URL as a string, formatting it on first use.
// User information (user:password@) is left out, and so are the values of
// query parameters that carry credentials (see Options.SecretQueryParams):
// this is the URL that is journaled, logged and put in errors. The live
// request keeps them; a resumed one needs PrepareRequest to put them back.
func (op *Operation) url() string {
	if op.URL == "" && op.u != nil {
		var withheld bool
		if op.URL, withheld = op.secrets.journalURL(op.u); withheld {
			u := *op.u
			u.User = nil
			op.unredacted = u.String()
		}
	}
	return op.URL
}

// StoredResponse is a final response as the journal records it.
type StoredResponse struct {
	StatusCode int
	// Header is the response's header without the fields whose names say
	// they carry a credential (Set-Cookie, X-Subject-Token, ...; the rule
	// of Options.SecretHeaders, which also names fields to leave out). An
	// answer from the journal carries this header.
	Header http.Header
	// Body holds at most Options.MaxJournalBody bytes; Truncated reports
	// whether the response had more.
	Body      []byte
	Truncated bool
	// Replayed reports that the server answered from its own record.
	Replayed bool
	// KeyReused reports that the server said the key had been used for a
	// different request (see Options.IsKeyReused): a call with the same
	// key is answered with ErrKeyReused.
	KeyReused bool
}

func (op *Operation) error(err error, attempts int) *Error {
	return &Error{Method: op.Method, URL: op.url(), Key: op.Key, Attempts: attempts, Err: err}
}
