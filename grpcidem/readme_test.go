package grpcidem_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeQuotesExample: the README's quick start is the compiled,
// tested Example, quoted whole.
func TestReadmeQuotesExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	s := string(src)
	i := strings.Index(s, "// A gRPC service runs each call")
	require.Positive(t, i)
	j := strings.Index(s[i:], "\n}\n") + i + 3
	assert.Contains(t, string(readme), "```go\n"+s[i:j]+"```\n", "README.md must quote Example whole")
	i = strings.Index(s, "// A client that survives its own crash")
	require.Positive(t, i)
	j = strings.Index(s[i:], "\n}\n") + i + 3
	assert.Contains(t, string(readme), "```go\n"+s[i:j]+"```\n", "README.md must quote ExampleTransport whole")
}
