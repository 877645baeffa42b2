package pgstore

import (
	"flag"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/golden/header-v1.bin is a header column written by an earlier
// release. Stored rows outlive releases: every later one must decode it.
var writeGolden = flag.Bool("golden.write", false, "rewrite testdata/golden (only ever from a release that must stay readable)")

const goldenHeader = "testdata/golden/header-v1.bin"

func goldenHeaderValue() http.Header {
	return http.Header{
		"Content-Type": {"application/json"},
		"Location":     {"/orders/42"},
		"X-Multi":      {"one", "", "three"},
		"X-Odd":        {"caf\xe9 \x00\x01\x7f", `it's "quoted" \ and; semi, comma`},
		"X-Long":       {string(make([]byte, 300))},
	}
}

func TestGoldenHeader(t *testing.T) {
	if *writeGolden {
		require.NoError(t, os.WriteFile(goldenHeader, encodeHeader(goldenHeaderValue()), 0o644))
	}
	b, err := os.ReadFile(goldenHeader)
	require.NoError(t, err)
	got, err := decodeHeader(b)
	require.NoError(t, err)
	require.Equal(t, goldenHeaderValue(), got)
	require.Equal(t, b, encodeHeader(got), "the encoding is byte for byte the same")
}
