// This file holds the encoding of a call's outcome as the store keeps it:
// the response message, or the final status with its details.

package grpcidem

import (
	"errors"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	spb "google.golang.org/genproto/googleapis/rpc/status"
)

// An outcome is stored as server.RunOnce's result, one byte string:
//
//	byte 0   outcomeVersion
//	byte 1   'M': a response message follows, as its full name
//	         (length-prefixed) and its protobuf encoding;
//	         'S': a final status follows, as an encoded google.rpc.Status
//	         (code, message and details)
//
// The version byte lets a later release read what this one wrote.
const outcomeVersion = 1

const (
	kindMessage = 'M'
	kindStatus  = 'S'
)

// errBadOutcome is the error for a stored outcome this release cannot read.
var errBadOutcome = errors.New("grpcidem: stored outcome is not one grpcidem wrote")

// encodeMessage returns the stored form of response m.
func encodeMessage(m proto.Message) ([]byte, error) {
	name := m.ProtoReflect().Descriptor().FullName()
	b := make([]byte, 0, 2+len(name)+binaryMaxVarint+proto.Size(m))
	b = append(b, outcomeVersion, kindMessage)
	b = protowire.AppendString(b, string(name))
	return proto.MarshalOptions{}.MarshalAppend(b, m)
}

// encodeStatus returns the stored form of final status st.
func encodeStatus(st *status.Status) ([]byte, error) {
	return proto.MarshalOptions{}.MarshalAppend([]byte{outcomeVersion, kindStatus}, st.Proto())
}

// decodeOutcome reads a stored outcome: the response message (of the type
// its name resolves to in protoregistry.GlobalTypes) or the final status.
func decodeOutcome(b []byte) (proto.Message, *status.Status, error) {
	if len(b) < 2 || b[0] != outcomeVersion {
		return nil, nil, errBadOutcome
	}
	switch b[1] {
	case kindMessage:
		name, n := protowire.ConsumeString(b[2:])
		if n < 0 {
			return nil, nil, errBadOutcome
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
		if err != nil {
			return nil, nil, errors.Join(errBadOutcome, err)
		}
		m := mt.New().Interface()
		if err := proto.Unmarshal(b[2+n:], m); err != nil {
			return nil, nil, errors.Join(errBadOutcome, err)
		}
		return m, nil, nil
	case kindStatus:
		var p spb.Status
		if err := proto.Unmarshal(b[2:], &p); err != nil {
			return nil, nil, errors.Join(errBadOutcome, err)
		}
		return nil, status.FromProto(&p), nil
	}
	return nil, nil, errBadOutcome
}
