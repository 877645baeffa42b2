// This file holds what the client reads from a status's details: the
// reason of idem's ErrorInfo, and the wait of a google.rpc.RetryInfo.

package grpcidem

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// reasonOf returns the reason of st's ErrorInfo in Domain, or "".
func reasonOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			return info.GetReason()
		}
	}
	return ""
}

// hint returns the delay st's google.rpc.RetryInfo asks for, clamped to
// [0, limit], and whether it has one.
func hint(st *status.Status, limit time.Duration) (time.Duration, bool) {
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.RetryInfo)
		if !ok || info.GetRetryDelay() == nil {
			continue
		}
		delay := info.GetRetryDelay().AsDuration() // saturates on overflow
		return min(max(delay, 0), limit), true
	}
	return 0, false
}
