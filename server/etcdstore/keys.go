package etcdstore

import (
	"strconv"
	"strings"

	"github.com/idemhq/idem/server"
)

// recordKey names the one etcd key that holds k's record:
//
//	<prefix><n>:<scope><key>
//
// where n is the length of the scope in bytes, in decimal. The length
// keeps ("ab", "c") and ("a", "bc") apart, so no two (scope, key) pairs
// name the same etcd key, whatever bytes they hold; etcd keys are bytes,
// so nothing needs escaping. Every record of a scope shares the prefix
// <prefix><n>:<scope>.
func recordKey(prefix string, k server.Key) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(k.Scope) + len(k.Key) + 4)
	b.WriteString(prefix)
	b.WriteString(strconv.Itoa(len(k.Scope)))
	b.WriteByte(':')
	b.WriteString(k.Scope)
	b.WriteString(k.Key)
	return b.String()
}
