// Package idem makes retrying state-changing HTTP calls safe: sending a
// request again never means doing it twice.
//
// A client mints one idempotency key per logical operation, writes the
// operation to a local journal before the first byte leaves, and retries
// with the same key and the same bytes until it has a final answer, even
// across a crash of its own process. The server recognises the repeats
// (see package github.com/idemhq/idem/server).
//
// The canonical sequence:
//
//	journal, err := idem.OpenJournal("/var/lib/myapp/idem.journal", idem.JournalOptions{})
//	if err != nil { ... }
//	defer journal.Close()
//	client, err := idem.New(idem.Options{Journal: journal, PrepareRequest: addCredentials})
//	if err != nil { ... }
//
//	// After a restart, finish what the last process left pending.
//	resumed, err := client.Resume(ctx)
//
//	req, _ := http.NewRequestWithContext(ctx, "POST", url, body)
//	resp, err := client.Do(req)
//	var e *idem.Error
//	switch {
//	case err == nil:                  // resp.StatusCode, resp.Body, resp.Replayed
//	case errors.Is(err, idem.ErrKeyReused): // a bug: one key, two different requests
//	case errors.As(err, &e):          // no final answer yet: e.Key is still pending
//	}
//
// # Keys
//
// [Client.Do] uses the request's Idempotency-Key header if it has one, or
// mints a UUIDv7 ([NewKey]; [NewULID] by option). Keys that must be the same
// in any process come from business IDs with [DeriveKey] or, unguessable by
// other clients, [DeriveKeyHMAC]; or from a name bound in the journal with
// [Client.NamedKey] and [Client.DoNamed]. Keys are 1 to 255 printable ASCII
// characters, sent bare or, with Options.QuoteKey, as a quoted Structured
// Field string. The header name is configurable (Options.Header); an API
// that takes the key in its JSON body gets it there with Options.BodyKey,
// read from the caller's body or written into it, the journal keeping the
// bytes sent. Options.MaxKeyLen refuses keys the API would refuse.
//
// # Profiles
//
// A [Profile] carries a well-known API's conventions in one value: where
// the key goes and how long it may be, how long the server keeps it, how
// the API says a key was reused or a request already ran, which headers
// hint at retrying, and which headers it requires. idem ships [Stripe],
// [Adyen], [PayPal], [Square] and [GoCardless], each value citing the
// provider's document:
//
//	client, err := idem.New(idem.Options{Profile: idem.Stripe(), Journal: journal})
//
// Options fields left zero take the profile's values; fields set override
// them.
//
// # Retries
//
// Transport errors and 408, 409, 425, 429, 500, 502, 503 and 504 are
// retried, with the same key and byte-identical body, after capped
// exponential backoff with full jitter ([Backoff]) or the server's
// Retry-After ([ParseRetryAfter]), clamped but never shortened. No wait
// starts that would end after the context's deadline ([ErrDeadline]). A
// client-wide token bucket ([BudgetOptions]) stops retry storms. A response
// marked Idempotent-Replayed is final whatever its status: asking again
// will not change it. An answer in which the server says the key was first
// used for a different request is [ErrKeyReused] (idem's own problem type,
// the IETF draft's 422, Stripe's idempotency_error, or what
// Options.IsKeyReused recognises); any other 4xx, a 422 validation error
// included, is a final response. Headers named in Options.RetryHints
// (Stripe-Should-Retry in the Stripe profile) are the server's explicit
// word: "false" on a status idem would retry stops at once with
// [ErrServerSaidNoRetry], "true" on a final error retries it; no header is
// read as a hint unless named. Attempt counts include the resends net/http
// makes on its own on a dead keep-alive connection.
//
// # Journal
//
// A [Journal] is one bbolt file, mode 0600, locked by one process. Each
// operation (key, method, URL, safe headers, exact body, fingerprint,
// timestamps) is fsync'd before its first attempt; concurrent operations
// share fsyncs. Credentials are never written: Authorization, Cookie,
// Proxy-Authorization, any header whose name says it carries one (X-Api-Key,
// X-Auth-Token, ...) and Options.SecretHeaders; or, with
// Options.JournalHeaders, every header not on that list.
// Options.PrepareRequest puts them back on every attempt, resumed ones
// included. Every record carries a checksum: a damaged one is reported as
// [ErrJournalCorrupt], never sent, and a damaged file is refused when it
// is opened, never a crash. A final answer is recorded lazily, so the
// journal adds one durable write per operation to the critical path; a
// record lost in a crash only means the operation is resumed and the server
// replays it. A repeat of a finished operation is answered from the journal
// without the network.
//
// After a restart, [Client.Resume] sends every pending operation again. An
// operation older than the server's key retention (Options.KeyRetention,
// 24 h by default) is not sent: the server may have forgotten its key. It is
// marked [Expired] and reported for reconciliation.
//
// # net/http
//
// [Client.Transport] and [Client.HTTPClient] give SDKs built on net/http all
// of this without code changes.
package idem
