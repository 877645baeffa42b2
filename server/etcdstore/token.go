package etcdstore

import (
	"strconv"
	"strings"
)

// token is what a Claim's token carries:
//
//	<revision>.<nonce>.<fingerprint>
//
// The revision is the one at which the claim was written: while the
// record's ModRevision is still that, nothing has touched it since, and
// Renew, Complete and Release can be one transaction fenced by a revision
// compare. The nonce, written into the running record, identifies the
// claim once a renewal has moved the revision on (the store then reads
// the record and compares nonces, one more round trip). The fingerprint
// is what the completed record must hold: Complete writes it without
// reading the record first.
type token struct {
	rev         int64
	nonce       string
	fingerprint string
}

func (t token) String() string {
	return strconv.FormatInt(t.rev, 10) + "." + t.nonce + "." + t.fingerprint
}

// parseToken reads a token String wrote; ok is false for anything else,
// which no claim holds.
func parseToken(s string) (t token, ok bool) {
	rev, rest, ok1 := strings.Cut(s, ".")
	nonce, fp, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || nonce == "" {
		return token{}, false
	}
	n, err := strconv.ParseInt(rev, 10, 64)
	if err != nil || n <= 0 {
		return token{}, false
	}
	return token{rev: n, nonce: nonce, fingerprint: fp}, true
}
