// This file holds the statuses the server interceptor answers with
// itself, the table from idem's answers to gRPC codes, and which of a
// handler's codes are recorded.

package grpcidem

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Domain is the google.rpc.ErrorInfo domain of every status the server
// interceptor answers with itself; the reasons below are its reasons.
const Domain = "idem.dev"

// Reasons of the google.rpc.ErrorInfo detail each status the server
// interceptor writes itself carries, so a client can tell them from a
// handler's with the same code. They match the HTTP middleware's problem
// types.
const (
	ReasonKeyMissing        = "KEY_MISSING"        // InvalidArgument
	ReasonKeyInvalid        = "KEY_INVALID"        // InvalidArgument
	ReasonScopeUnavailable  = "SCOPE_UNAVAILABLE"  // Unauthenticated
	ReasonKeyReused         = "KEY_REUSED"         // FailedPrecondition
	ReasonInFlight          = "IN_FLIGHT"          // Aborted, RetryInfo 1 s
	ReasonLeaseLost         = "LEASE_LOST"         // Aborted, RetryInfo 1 s
	ReasonStoreUnavailable  = "STORE_UNAVAILABLE"  // Unavailable, RetryInfo 1 s
	ReasonStoreFull         = "STORE_FULL"         // Unavailable, RetryInfo 30 s
	ReasonOverloaded        = "OVERLOADED"         // Unavailable, RetryInfo 1 s
	ReasonNotRecorded       = "NOT_RECORDED"       // Unavailable, RetryInfo 1 s
	ReasonResultNotKept     = "RESULT_NOT_KEPT"    // FailedPrecondition
	ReasonKeyFieldMissing   = "KEY_FIELD_MISSING"  // Internal
	ReasonOutcomeUnreadable = "OUTCOME_UNREADABLE" // Internal
	ReasonStreaming         = "STREAMING"          // Unimplemented
)

// The statuses the interceptor answers with, built once: code, fixed
// message (never an internal error's text), ErrorInfo, and RetryInfo where
// a retry with the same key is what the client should do. The choice of
// codes is explained in the package documentation (# Codes).
var (
	stKeyMissing        = refusal(codes.InvalidArgument, ReasonKeyMissing, "idempotency key missing: this method requires one", 0)
	stKeyInvalid        = refusal(codes.InvalidArgument, ReasonKeyInvalid, "idempotency key malformed: 1 to 255 printable ASCII characters, one value", 0)
	stScopeUnavailable  = refusal(codes.Unauthenticated, ReasonScopeUnavailable, "the call is not attributed to a client, so its idempotency key cannot be used", 0)
	stKeyReused         = refusal(codes.FailedPrecondition, ReasonKeyReused, "idempotency key was used with a different request; use a new key for a new operation", 0)
	stInFlight          = refusal(codes.Aborted, ReasonInFlight, "an earlier call with this idempotency key is still running; retry with the same key to get its outcome", time.Second)
	stLeaseLost         = refusal(codes.Aborted, ReasonLeaseLost, "another call with this idempotency key took it over; retry with the same key to get its outcome", time.Second)
	stStoreUnavailable  = refusal(codes.Unavailable, ReasonStoreUnavailable, "the call could not be checked for repeats, so it did not run; retry with the same key", time.Second)
	stStoreFull         = refusal(codes.Unavailable, ReasonStoreFull, "no room to record a new idempotency key, so the call did not run; retry later with the same key", 30*time.Second)
	stOverloaded        = refusal(codes.Unavailable, ReasonOverloaded, "the call could not start in time, so it did not run; retry with the same key", time.Second)
	stNotRecorded       = refusal(codes.Unavailable, ReasonNotRecorded, "the call's work was undone, or, if it was recorded after all, a retry replays it; retry with the same key", time.Second)
	stResultNotKept     = refusal(codes.FailedPrecondition, ReasonResultNotKept, "the call ran, and its answer was too large to keep; look its result up another way", 0)
	stKeyFieldMissing   = refusal(codes.Internal, ReasonKeyFieldMissing, "the server is configured to read idempotency keys from a field this request has not", 0)
	stOutcomeUnreadable = refusal(codes.Internal, ReasonOutcomeUnreadable, "the recorded outcome of this idempotency key cannot be read", 0)
	stStreaming         = refusal(codes.Unimplemented, ReasonStreaming, "idempotency keys are not supported on streaming calls; nothing ran", 0)
)

// refusal builds a status the interceptor answers with: code, message,
// an ErrorInfo with reason, and a RetryInfo if retryAfter is positive.
func refusal(code codes.Code, reason, msg string, retryAfter time.Duration) *status.Status {
	st := status.New(code, "idem: "+msg)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: Domain}}
	if retryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	}
	st, err := st.WithDetails(details...)
	if err != nil {
		panic(err) // the details are fixed messages: they always encode
	}
	return st
}

// recorded reports whether a handler's final status with code c is
// recorded and replayed (otherwise its key is released, so a retry runs
// the handler again). It follows the HTTP middleware's 4xx-recorded,
// 5xx-released rule on gRPC's HTTP mapping of the codes, with the codes
// that say "not done, try again" always released.
func (c *serverConfig) recorded(code codes.Code) bool {
	switch code {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.FailedPrecondition, codes.OutOfRange, codes.Unauthenticated:
		return true
	case codes.Unknown, codes.Internal, codes.DataLoss:
		return c.storeServerErrors
	}
	// Canceled, DeadlineExceeded, ResourceExhausted, Aborted, Unavailable,
	// Unimplemented, and codes gRPC does not define.
	return false
}
