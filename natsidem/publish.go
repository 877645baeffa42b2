// This file holds Publish, the publisher's half: every attempt at one
// message carries the same Nats-Msg-Id, so the stream drops repeats
// within its duplicate window and the consumer's record drops the rest.

package natsidem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/server"
)

// ErrInvalidMsgID is returned (wrapped) by [Publish] for an ID that is not
// 1 to 252 printable ASCII characters without a comma, the IDs [KeyOf]
// uses as they are.
var ErrInvalidMsgID = errors.New("natsidem: invalid message ID")

// Defaults of [PublishOptions].
const (
	// DefaultPublishAttempts is the default of PublishOptions.Attempts.
	DefaultPublishAttempts = 3
	// DefaultAttemptTimeout is the default of PublishOptions.AttemptTimeout.
	DefaultAttemptTimeout = 2 * time.Second
)

// PublishOptions configures [Publish]. The zero value means the defaults.
type PublishOptions struct {
	// Attempts is how many times a message is sent before Publish gives
	// up, each with the same ID. Default 3 ([DefaultPublishAttempts]).
	Attempts int
	// AttemptTimeout bounds the wait for each attempt's acknowledgement.
	// Default 2 s ([DefaultAttemptTimeout]).
	AttemptTimeout time.Duration
	// Header holds further header fields for the message (its
	// Nats-Msg-Id is set by Publish). Default nil.
	Header nats.Header
	// Opts are passed to every attempt's PublishMsg (jetstream.WithExpectStream,
	// say). Default nil.
	Opts []jetstream.PublishOpt
}

// Publish publishes data to subject as the message id: the Nats-Msg-Id
// header is set to id, and an attempt whose acknowledgement does not come
// within PublishOptions.AttemptTimeout is sent again with the same ID,
// up to PublishOptions.Attempts in all. Within the stream's duplicate
// window (StreamConfig.Duplicates, 2 minutes by default) the stream
// stores the message once however often it was sent (the PubAck of a
// repeat has Duplicate set); a repeat after the window is stored again,
// and [Handle] replays it from the record under the same ID, for as long
// as the record is retained. Choose id from the operation (an order
// number, a derived key), never per attempt.
//
// Publish returns the PubAck of the attempt that was acknowledged, or
// the last attempt's error, wrapped: a ctx done (ctx's error is
// wrapped), an acknowledgement that never came (the message may be
// stored: call Publish again with the same id), or the stream's refusal.
// It returns an error wrapping [ErrInvalidMsgID], having sent nothing,
// for an invalid id. Publish is safe for concurrent use.
func Publish(ctx context.Context, js jetstream.JetStream, subject, id string, data []byte, opts PublishOptions) (*jetstream.PubAck, error) {
	if k, err := server.ParseKey("id:" + id); err != nil || k != "id:"+id || id == "" {
		return nil, fmt.Errorf("%w: %q", ErrInvalidMsgID, truncate(id, 64))
	}
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = DefaultPublishAttempts
	}
	timeout := orDefault(opts.AttemptTimeout, DefaultAttemptTimeout)
	popts := append([]jetstream.PublishOpt{jetstream.WithMsgID(id)}, opts.Opts...)
	var err error
	for range attempts {
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		for k, v := range opts.Header {
			msg.Header[k] = v
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		var ack *jetstream.PubAck
		ack, err = js.PublishMsg(actx, msg, popts...)
		cancel()
		if err == nil {
			return ack, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("natsidem: publish %q: %w", id, ctx.Err())
		}
		if !retryable(err) {
			break
		}
	}
	return nil, fmt.Errorf("natsidem: publish %q: %w", id, err)
}

// retryable reports whether a publish attempt that failed with err may
// have been lost on the way, rather than refused by the stream.
func retryable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
