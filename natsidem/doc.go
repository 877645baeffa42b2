// Package natsidem turns JetStream's at-least-once delivery into effects
// that happen once: each message's work runs through [server.RunOnce]
// keyed by the message's ID, and the message is acked only after its
// outcome is recorded.
//
// The canonical sequence, with pgstore in transactional mode so that the
// work's writes and the record of its message commit together:
//
//	store, _ := pgstore.New(pool, pgstore.Options{Transactional: true})
//	cons, _ := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
//		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
//	})
//	cc, _ := cons.Consume(natsidem.Handler(store, func(ctx context.Context, msg jetstream.Msg) error {
//		tx, _ := pgstore.Tx(ctx)
//		_, err := tx.Exec(ctx, "INSERT INTO invoices ...", msg.Data())
//		return err
//	}, natsidem.Options{Logger: logger}))
//	defer cc.Stop()
//
// and on the publisher's side, one ID per operation, the same on every
// attempt:
//
//	_, err := natsidem.Publish(ctx, js, "orders.created", "order-"+orderID, body, natsidem.PublishOptions{})
//
// # Why it is exactly once
//
// JetStream redelivers every message not acked within the consumer's
// AckWait, so a consumer that crashes at any point before its ack leaves
// the message to be delivered again; what it must never do is ack before
// the effect is durable (a crash then loses the message) or run the
// effect again on the redelivery (a crash after the effect and before the
// ack doubles it). [Handle] does neither: it acks after RunOnce has
// recorded the outcome, and a redelivery of a recorded message is
// replayed, not run. With pgstore in transactional mode the effect and
// the record are one commit: before it, a crash leaves neither; after it,
// both. With a store that keeps the record apart from the effect, a crash
// between the two runs the effect again once the claim's lease lapses.
//
// # Keys
//
// A message's key is its Nats-Msg-Id, else its stream and stream sequence
// ([KeyOf]). The sequence covers redeliveries only: a publisher that
// retries a publish whose acknowledgement it lost stores the message
// twice, under two sequences. [Publish] sets Nats-Msg-Id, so the stream's
// duplicate window drops such a repeat, and the record drops one that
// comes after the window.
//
// # Settlements
//
// Retryable failures are nakked with a delay that doubles per delivery
// (Options.RetryDelay), a message whose key another delivery holds with
// Options.InFlightDelay, and permanent failures ([ErrPermanent], a
// Nats-Msg-Id reused with another body) are terminated. Set the
// consumer's MaxDeliver to bound a message that always fails with a
// retryable error, and its AckWait above the longest work: a delivery
// still running at AckWait is delivered again, and the copy waits (it is
// nakked in flight) until the first is recorded, then is replayed.
//
// # Servers
//
// Tested with nats.go v1.55.0 against NATS Server 2.9 and 2.15: Handle
// uses Ack, Nak, NakWithDelay, Term and the message metadata, which 2.9
// has.
package natsidem
