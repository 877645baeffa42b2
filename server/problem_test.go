package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestByteSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		1:             "1 byte",
		100:           "100 bytes",
		1023:          "1023 bytes",
		1024:          "1 KiB",
		1536:          "1536 bytes",
		64 << 10:      "64 KiB",
		1 << 20:       "1 MiB",
		1<<20 + 1:     "1048577 bytes",
		3 << 20:       "3 MiB",
		5 << 30:       "5 GiB",
		1<<30 + 1<<20: "1025 MiB",
		1<<62 + 1<<10: "4503599627370497 KiB",
	} {
		assert.Equal(t, want, byteSize(n), "%d bytes", n)
	}
}
