// This file holds the recording of a handler's response (recorder), the
// headers that are stored and replayed, and sending a first or replayed
// answer.

package server

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// recorder is the http.ResponseWriter a handler behind the middleware
// writes to. It buffers the whole response, so the outcome can be recorded
// before the client sees it. Flush fixes the status and sends nothing;
// informational (1xx) responses are dropped; hijacking is not offered.
// Unlike net/http, header fields set after the status are kept, and
// trailers are not supported (they are neither sent as trailers nor
// recorded).
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if rec.wroteHeader || code < 200 {
		return
	}
	rec.status, rec.wroteHeader = code, true
}

func (rec *recorder) Write(p []byte) (int, error) {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(rec.status) {
		return 0, http.ErrBodyNotAllowed
	}
	return rec.body.Write(p)
}

// Flush sends nothing (the response is sent once it is recorded) but, as
// in net/http, it fixes the status: 200 if none was written.
func (rec *recorder) Flush() {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
}

// response finishes the recording as net/http would (status 200 if none
// was written, a sniffed Content-Type if none was set) and returns it,
// sharing the recorder's storage. Its Header is the whole response
// header, the fields the chain around the middleware set included.
func (rec *recorder) response() StoredResponse {
	if !rec.wroteHeader {
		rec.status = http.StatusOK
	}
	body := rec.body.Bytes()
	if _, set := rec.header["Content-Type"]; !set && len(body) > 0 && bodyAllowed(rec.status) {
		rec.header.Set("Content-Type", http.DetectContentType(body))
	}
	return StoredResponse{Status: rec.status, Header: rec.header, Body: body}
}

// send writes resp to w: its header fields replace those of the same
// names in w. The header values are shared, capped so that appending to
// them in w copies them first.
func send(w http.ResponseWriter, resp StoredResponse) {
	dst := w.Header()
	for name, vals := range resp.Header {
		dst[name] = vals[:len(vals):len(vals)]
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}

// replay writes a stored outcome to w, marked with ReplayedHeader and with
// its Content-Length recomputed.
func replay(w http.ResponseWriter, resp StoredResponse) {
	if resp.Status < 100 || resp.Status > 999 {
		resp.Status = http.StatusOK
	}
	h := w.Header()
	h.Set(ReplayedHeader, "true")
	if bodyAllowed(resp.Status) {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	send(w, resp)
}

// sendFirst writes the handler's own answer to w, whose header becomes
// exactly the recorded one: fields the handler deleted from those the
// chain set are deleted.
func sendFirst(w http.ResponseWriter, resp StoredResponse) {
	dst := w.Header()
	for name := range dst {
		if _, ok := resp.Header[name]; !ok {
			delete(dst, name)
		}
	}
	send(w, resp)
}

// sameHeader reports whether a and b hold the same fields and values.
func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for name, vals := range a {
		if !slices.Equal(vals, b[name]) {
			return false
		}
	}
	return true
}

// changedHeader returns the fields of h that differ from those in outer
// (the header the chain around the middleware set before the handler
// ran): what the handler added or changed. A field the handler extended
// (Add) is returned whole, with the chain's values for this request in it;
// a field the handler deleted is not recorded as deleted. It returns h
// itself when outer is empty.
func changedHeader(h, outer http.Header) http.Header {
	if len(outer) == 0 {
		return h
	}
	out := make(http.Header, len(h))
	for name, vals := range h {
		if !slices.Equal(vals, outer[name]) {
			out[name] = vals
		}
	}
	return out
}

// storedHeader returns the fields of h that are recorded and replayed:
// all but hop-by-hop fields (RFC 9110, section 7.6.1) and the fields named
// in Connection; fields that belong to one response only (Date, and
// Set-Cookie: a replay must not hand one client's cookie, or session, to
// a retry); the fields the replay sets itself (Content-Length,
// Idempotent-Replayed); and trailers. It returns h itself when nothing is
// dropped. Stored values are shared and read-only: send and replay cap
// them, so a writer that appends to a replayed field copies it first.
func storedHeader(h http.Header) http.Header {
	conn := h["Connection"]
	keep := true
	for name := range h {
		if unstored(name, conn) {
			keep = false
			break
		}
	}
	if keep {
		return h
	}
	out := make(http.Header, len(h))
	for name, vals := range h {
		if !unstored(name, conn) {
			out[name] = vals
		}
	}
	return out
}

// unstored reports whether the field name is left out of a recording;
// conn is the response's Connection field.
func unstored(name string, conn []string) bool {
	if strings.HasPrefix(name, http.TrailerPrefix) {
		return true
	}
	switch http.CanonicalHeaderKey(name) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Date", "Set-Cookie", "Content-Length", ReplayedHeader:
		return true
	}
	for _, line := range conn {
		for tok := range strings.SplitSeq(line, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), name) {
				return true
			}
		}
	}
	return false
}

// bodyAllowed reports whether a response with status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
