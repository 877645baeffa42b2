// This file holds what a message runs once under: its key (the publisher's
// Nats-Msg-Id, else its place in the stream) and its fingerprint.

package natsidem

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/server"
)

// ErrNotJetStream is returned (wrapped) by [KeyOf], and is the error of a
// [Term] disposition from [Handle], for a message without JetStream
// metadata: one not delivered by a JetStream consumer, which can be
// neither keyed nor acknowledged.
var ErrNotJetStream = errors.New("natsidem: not a JetStream message")

// KeyOf returns the key msg's effect runs once under. Its scope is scope,
// or, if scope is empty, "nats/" and the message's stream name. Its key
// is:
//
//   - "id:" and the Nats-Msg-Id header, if the message has one: the
//     publisher's ID, the same on a republish (see [Publish]) and on a
//     copy sourced into another stream. An ID that is not 1 to 252
//     printable ASCII characters without a comma is replaced by
//     "id-sha256:" and the hex SHA-256 of its bytes.
//   - else "seq:", the stream name, ":" and the stream sequence: the
//     same on every redelivery of the stored message, but a message
//     published twice is stored twice, under two sequences, and runs
//     twice. Publish with a Nats-Msg-Id.
//
// The two forms never meet. KeyOf returns an error wrapping
// [ErrNotJetStream] if msg has no JetStream metadata.
func KeyOf(msg jetstream.Msg, scope string) (server.Key, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return server.Key{}, fmt.Errorf("%w: %w", ErrNotJetStream, err)
	}
	if scope == "" {
		scope = "nats/" + meta.Stream
	}
	if id := msg.Headers().Get(jetstream.MsgIDHeader); id != "" {
		k := "id:" + id
		if p, err := server.ParseKey(k); err != nil || p != k {
			sum := sha256.Sum256([]byte(id))
			k = "id-sha256:" + hex.EncodeToString(sum[:])
		}
		return server.Key{Scope: scope, Key: k}, nil
	}
	return server.Key{Scope: scope, Key: "seq:" + meta.Stream + ":" + strconv.FormatUint(meta.Sequence.Stream, 10)}, nil
}

// fingerprint is the SHA-256 of msg's subject and data, length-prefixed
// so that no two (subject, data) pairs meet: a Nats-Msg-Id published again
// with another subject or body is refused as reused
// ([server.ErrKeyReused]), never taken for the first.
func fingerprint(msg jetstream.Msg) string {
	h := sha256.New()
	var n [8]byte
	subject := msg.Subject()
	binary.BigEndian.PutUint64(n[:], uint64(len(subject)))
	h.Write(n[:])
	h.Write([]byte(subject))
	h.Write(msg.Data())
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
