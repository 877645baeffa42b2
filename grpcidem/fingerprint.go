// This file holds Fingerprint, the fingerprint a repeated call must match.

package grpcidem

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// fingerprintVersion starts every fingerprint's input. Fingerprints are
// stored with their records, so the encoding below never changes under
// this tag. It differs from the HTTP middleware's, so a key a gRPC call
// and an HTTP request share in one store is reused, never replayed across.
const fingerprintVersion = "idem-grpc-fingerprint-1"

// deterministic encodes the messages fingerprints are taken over.
var deterministic = proto.MarshalOptions{Deterministic: true}

// Fingerprint returns the fingerprint of a call of fullMethod
// ("/package.Service/Method") with request req: a lowercase hex SHA-256
// (64 characters) over the length-prefixed method name and req's
// deterministic protobuf encoding (proto.MarshalOptions{Deterministic:
// true}), so map entries in any order fingerprint alike.
//
// The server interceptor takes the fingerprint over the message as the
// server decoded it. Fields unknown to the server's copy of the schema are
// kept as they were sent; a field the server knows and the client left at
// its default is absent either way. Deterministic encoding is stable
// within one build, not a canonical form across languages or schema
// changes: a deploy that changes a request message's definition while
// keys of the old one are retained may see a retry as a different request
// (FailedPrecondition), never a different request as a retry.
//
// Fingerprint fails only if req cannot be encoded (a required field of a
// proto2 message unset, say). It is safe for concurrent use.
func Fingerprint(fullMethod string, req proto.Message) (string, error) {
	b, err := deterministic.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("grpcidem: fingerprint: %w", err)
	}
	in := make([]byte, 0, len(fingerprintVersion)+len(fullMethod)+2*binaryMaxVarint)
	in = append(in, fingerprintVersion...)
	in = protowire.AppendString(in, fullMethod)
	in = protowire.AppendVarint(in, uint64(len(b)))
	h := sha256.New()
	h.Write(in)
	h.Write(b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
}

const binaryMaxVarint = 10
