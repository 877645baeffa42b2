package quickstart_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README quotes both quick starts whole: what a reader pastes is what
// these tests build and run.
func TestReadmeQuotesTheQuickStarts(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, file := range []string{"client/main.go", "server/main.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(readme), "```go\n"+string(src)+"```\n"),
			"README.md must quote examples/quickstart/%s whole, in a go code block", file)
	}
}
