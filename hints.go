// This file holds the reading of the server's explicit retry hints, the
// headers Options.RetryHints names.

package idem

import (
	"net/http"
	"strings"
)

// retryHint returns the server's explicit retry hint in h: the value of
// the first header of names that is present, if it is "true" or "false"
// in any case (surrounding spaces ignored). It returns nil when none is
// present, or the first present holds anything else: that is no hint, and
// the status decides. Only the listed headers are read, so an API's hint
// is honoured only where its profile, or the caller, names it.
func retryHint(h http.Header, names []string) *bool {
	for _, n := range names {
		vs, ok := h[n]
		if !ok || len(vs) == 0 {
			continue
		}
		v := strings.TrimSpace(vs[0])
		if hint := strings.EqualFold(v, "true"); hint || strings.EqualFold(v, "false") {
			return &hint
		}
		return nil
	}
	return nil
}
