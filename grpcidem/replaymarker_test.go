package grpcidem

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TestReplayMarkerOnlyOnRecordedAnswers: the header metadata of a call
// says it was replayed (the server sent it before the connection reset),
// and the call ends in a status the client retries (Unavailable from the
// reset; Aborted, ResourceExhausted, DeadlineExceeded): the answer idem's
// client gets carries no replay marker, which would make it final. On an
// answer the server may have recorded (OK, or a recorded status such as
// NotFound), the marker stays.
func TestReplayMarkerOnlyOnRecordedAnswers(t *testing.T) {
	t.Parallel()
	req, err := http.NewRequest(http.MethodPost, "grpc:///idem.test.v1.Charges/Charge", nil)
	require.NoError(t, err)
	md := metadata.Pairs(ReplayedHeader, "true")
	for code, kept := range map[codes.Code]bool{
		codes.Unavailable: false, codes.Aborted: false, codes.ResourceExhausted: false, codes.DeadlineExceeded: false,
		codes.OK: true, codes.NotFound: true, codes.InvalidArgument: true,
	} {
		resp, err := response(req, status.New(code, "x"), &emptypb.Empty{}, md)
		require.NoError(t, err)
		if kept {
			assert.Equal(t, "true", resp.Header.Get(ReplayedHeader), code.String())
		} else {
			assert.Empty(t, resp.Header.Get(ReplayedHeader), code.String())
		}
	}
}
