// Package webhook receives Standard Webhooks deliveries and runs each
// message's effect once, however often the sender delivers it: signatures
// and timestamps are checked first, and the effect runs through
// [server.RunOnce] keyed by the message's webhook-id.
//
// The canonical sequence:
//
//	v, err := webhook.NewVerifier(os.Getenv("WEBHOOK_SECRET"), webhook.VerifyOptions{})
//	if err != nil { ... } // ErrSecret
//	mux.Handle("POST /webhooks/payments", webhook.Handler(store, v,
//		func(ctx context.Context, m webhook.Message) error {
//			tx, _ := pgstore.Tx(ctx) // with pgstore in transactional mode
//			_, err := tx.Exec(ctx, "INSERT INTO payments ...", m.Body)
//			return err
//		}, webhook.Options{Scope: "provider-a"}))
//
// With pgstore in transactional mode the effect's writes and the record of
// its webhook-id commit together, or not at all: a crash between them is
// impossible, so the effect is exactly once. With a store that keeps the
// record elsewhere the effect is at most once per retention, and a crash
// after the effect but before the record runs it again.
//
// # Signatures
//
// A delivery carries webhook-id, webhook-timestamp and webhook-signature.
// The signed content is the ID, a dot, the timestamp as sent, a dot and
// the body's bytes; a v1 signature is "v1," and the standard base64 of its
// HMAC-SHA256 under the secret's key. The header may hold several
// signatures separated by spaces (a sender rotating its secret signs with
// both); one that matches is enough, entries of other versions are
// skipped. A secret is "whsec_" and the key in standard base64 (the base64
// alone is accepted too). [Signer] is the sender's half.
//
// # Answers
//
// Standard Webhooks senders treat any 2xx as delivered and retry
// everything else on a schedule of their own, so each answer below is
// chosen for what the sender does next. In every refusal nothing runs.
//
//   - 204 to the first delivery that ran the effect and to every repeat of
//     it (with Idempotent-Replayed: true): the message is handled, and the
//     sender must stop.
//   - 401 to a delivery whose signature does not match (ProblemSignature)
//     and to one whose timestamp is more than the tolerance (default 5
//     minutes) in the past or the future (ProblemTimestamp). Both are
//     failures of the delivery's credentials rather than of its form: a
//     timestamp is what makes a signature expire, and an old signed
//     delivery sent again by someone who recorded it must get no further
//     than an unsigned one. A genuine sender signs every attempt at the
//     time it sends it, so its next retry carries a fresh timestamp and
//     gets in; one whose clock is off by more than the tolerance is
//     refused until it is fixed, as it should be. The signature is
//     checked before the timestamp, so an unsigned delivery is always
//     told ProblemSignature.
//   - 400 to a delivery whose headers are missing or malformed
//     (ProblemHeader): no signature can be checked.
//   - 422 to a delivery with a valid signature whose webhook-id was
//     handled with another body ([server.ProblemKeyReused]). The sender
//     holds the secret, so this is its bug: a new message under an old
//     ID. A 2xx would tell it the new body was handled when it was
//     dropped, and nobody would look; a 4xx leaves the delivery failed in
//     the sender's log, where a person sees it. Its retries get 422 again
//     and never run anything. Which body is the ID's is whichever was
//     handled first.
//   - 409 with Retry-After to a repeat that arrives while the first
//     delivery is still being handled (or, with Options.Run.Wait, the
//     replay once it is done): the sender's retry gets 204.
//   - 500 when the handler returns an error: its webhook-id is released
//     and the sender's retry runs it again.
//   - 503 with Retry-After when the store fails, is full or the work
//     cannot start in time: nothing ran, and a retry is safe.
//
// # Time
//
// The timestamp is checked against [VerifyOptions].Now, time.Now by
// default; a test sets it to a fake clock. A record is kept for
// Options.Run.Retention (default 72 hours, longer than a sender's retry
// schedule): a delivery of the same ID after that runs the effect again.
package webhook
