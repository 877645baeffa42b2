// This file holds what a replay carries: the allow-list of recorded
// header fields (Options.ReplayHeaders) and the replay hook
// (Options.OnReplay).

package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// alwaysReplayed are the fields an allow-list keeps whatever it names: a
// replayed body needs its type and coding, a 201 or a redirect its
// Location.
var alwaysReplayed = []string{"Content-Type", "Content-Encoding", "Location"}

// replayHeaders is Options.ReplayHeaders, checked: the fields recorded and
// replayed. A nil *replayHeaders is the default rule (storedHeader).
type replayHeaders struct {
	allow map[string]bool // canonical names
}

// newReplayHeaders returns the allow-list of names, or nil for none. It
// refuses a name that is no header field name, and one that is never
// replayed (hop-by-hop, Content-Length, Idempotent-Replayed, a trailer).
func newReplayHeaders(names []string) (*replayHeaders, error) {
	if names == nil {
		return nil, nil
	}
	a := &replayHeaders{allow: make(map[string]bool, len(names)+len(alwaysReplayed))}
	for _, n := range alwaysReplayed {
		a.allow[n] = true
	}
	for _, n := range names {
		if !validFieldName(n) {
			return nil, fmt.Errorf("idem/server: Options.ReplayHeaders has %q, which is not a header field name", n)
		}
		c := http.CanonicalHeaderKey(n)
		if c != "Date" && c != "Set-Cookie" && unstored(c, nil) {
			return nil, fmt.Errorf("idem/server: Options.ReplayHeaders has %s, which is never replayed", c)
		}
		a.allow[c] = true
	}
	return a, nil
}

// stored returns the fields of h that are recorded: with no allow-list,
// storedHeader's; with one, the fields it allows, less those the
// response's Connection field names. Values are shared with h, each
// field's lines kept apart as the handler wrote them.
func (a *replayHeaders) stored(h http.Header) http.Header {
	if a == nil {
		return storedHeader(h)
	}
	conn := h["Connection"]
	out := make(http.Header, min(len(h), len(a.allow)))
	for name, vals := range h {
		c := name
		if !a.allow[c] {
			if c = http.CanonicalHeaderKey(name); !a.allow[c] {
				continue
			}
		}
		if namedIn(conn, c) {
			continue
		}
		out[c] = vals
	}
	return out
}

// namedIn reports whether a Connection field's values name the field.
func namedIn(conn []string, name string) bool {
	for _, line := range conn {
		for tok := range strings.SplitSeq(line, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), name) {
				return true
			}
		}
	}
	return false
}

// validFieldName reports whether s is an RFC 9110 token.
func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// replay answers r with the record rec: the recorded outcome, marked
// replayed, after Options.OnReplay, if set, has seen and changed the
// header to send, which then holds copies of the recorded values.
func (h *handler) replay(w http.ResponseWriter, r *http.Request, rec *Record) {
	hook := h.cfg.onReplay
	if hook == nil {
		replay(w, rec.Response)
		return
	}
	dst := w.Header()
	for name, vals := range rec.Response.Header {
		dst[name] = slices.Clone(vals)
	}
	view := *rec // the hook may keep nothing of the caller's Record
	hook(r, dst, &view)
	replay(w, StoredResponse{Status: rec.Response.Status, Body: rec.Response.Body})
}
