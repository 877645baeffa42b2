package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/bodykey"
)

// A prober sends the requests of idem check and compares their answers.
type prober struct {
	method string
	url    string
	body   []byte      // the request body, without a key
	header http.Header // the user's headers, without the key
	place  keyPlace
	key    string // the fresh key the probes share
	copies int
	// otherBody is the changed body, without a key; nil if there is none.
	otherBody []byte
	// hc sends the copies at once and the request without a key, as they
	// are; client sends the other probes as idem's client does, reading
	// the answers with the profile's recognisers; quoted is client with
	// the key quoted, nil with a body key.
	hc             *http.Client
	client, quoted *idem.Client
}

// newProber returns a prober for the request, with a fresh key: a UUIDv7,
// or with a profile a key as long as the profile says the API takes.
func newProber(method, url string, body []byte, h http.Header, place keyPlace, opts idem.Options, copies int, timeout time.Duration) (*prober, error) {
	p := &prober{
		method: method, url: url, body: body, header: h, place: place,
		key: idem.NewKey(), copies: copies, hc: newProbeClient(copies, timeout),
	}
	if place.profile != nil {
		p.key = probeKey(place.maxLen)
	}
	opts.Transport = p.hc.Transport
	opts.AttemptTimeout = timeout
	opts.MaxAttempts = 1 // each probe is one request
	opts.MaxErrorBody = maxAnswer
	var err error
	if p.client, err = idem.New(opts); err != nil {
		return nil, usagef("%s", strings.TrimPrefix(err.Error(), "idem: "))
	}
	if place.field == nil {
		opts.QuoteKey = true
		if p.quoted, err = idem.New(opts); err != nil {
			return nil, usagef("%s", strings.TrimPrefix(err.Error(), "idem: "))
		}
	}
	return p, nil
}

// probeKey returns a fresh key exactly n characters long: a UUIDv7, which
// is what idem's client mints, with random hex after it (or only random
// hex for an n under 36), so that the check also shows whether the API
// takes keys as long as its profile says.
func probeKey(n int) string {
	k := idem.NewKey()
	if n == len(k) {
		return k
	}
	if n > len(k) {
		k += "-"
	} else {
		k = ""
	}
	var b [idem.MaxKeyLen / 2]byte
	rand.Read(b[:])
	return k + hex.EncodeToString(b[:])[:n-len(k)]
}

// answer is what one request got.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
	// replayed: the answer says an earlier request under the key already
	// ran (Idempotent-Replayed: true, or the profile's reading).
	replayed bool
	// keyReused: the answer says the key was used for another request, as
	// idem's client reads it (its own signals and the profile's).
	keyReused bool
}

// maxAnswer bounds how much of an answer's body is read.
const maxAnswer = 1 << 20

// request returns the probe request with key (none if key is empty) in
// its place, and body.
func (p *prober) request(ctx context.Context, key string, body []byte) (*http.Request, error) {
	if key != "" && p.place.field != nil {
		var err error
		if body, err = bodykey.Put(body, p.place.field, key); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, p.method, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Header = p.header.Clone()
	if key != "" && p.place.field == nil {
		req.Header.Set(p.place.header, key)
	}
	return req, nil
}

// send sends the request once, as it is, with key (none if key is empty)
// and body.
func (p *prober) send(ctx context.Context, key string, body []byte) answer {
	req, err := p.request(ctx, key, body)
	if err != nil {
		return answer{err: err}
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	a := answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
	a.replayed = err == nil && (strings.EqualFold(a.header.Get("Idempotent-Replayed"), "true") ||
		p.place.profile != nil && p.place.profile.IsReplayed != nil &&
			p.place.profile.IsReplayed(&idem.Response{StatusCode: a.status, Header: a.header, Body: a.body, Key: key}))
	return a
}

// sendWith sends the request through c, one attempt, with key and body.
func (p *prober) sendWith(ctx context.Context, c *idem.Client, key string, body []byte) answer {
	req, err := p.request(ctx, key, body)
	if err != nil {
		return answer{err: err}
	}
	resp, err := c.Do(req)
	if err == nil {
		return answer{status: resp.StatusCode, header: resp.Header, body: resp.Body, replayed: resp.Replayed}
	}
	var e *idem.Error
	if errors.As(err, &e) && e.StatusCode != 0 {
		return answer{status: e.StatusCode, header: e.Header, body: e.Body, keyReused: errors.Is(err, idem.ErrKeyReused)}
	}
	if errors.As(err, &e) && e.Cause != nil {
		err = e.Cause // the transport's own words
	}
	return answer{err: err}
}

// burst sends n copies of the request with key at once.
func (p *prober) burst(ctx context.Context, key string, n int) []answer {
	out := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = p.send(ctx, key, p.body)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// ok reports a success: a 2xx or 3xx answer.
func (a answer) ok() bool { return a.err == nil && a.status >= 200 && a.status < 400 }

// busy reports an answer that says "not now, retry": the first request
// with the key is still running, or the server is overloaded. Nothing ran.
func (a answer) busy() bool {
	switch a.status {
	case http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return a.err == nil && !a.replayed
	}
	return false
}

// identity names the execution an answer reports, and how it was found:
// the Location header, else an "id" member of a JSON object body, or of
// its "data" object, or of the object that is its only member (Square's
// {"payment": {"id": ...}}), else a digest of the whole body.
func (a answer) identity() (id, how string) {
	if loc := a.header.Get("Location"); loc != "" {
		return loc, "Location"
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(a.body, &doc) == nil {
		if id := jsonID(doc["id"]); id != "" {
			return id, "id"
		}
		inner := doc["data"]
		if len(doc) == 1 {
			for _, v := range doc {
				inner = v
			}
		}
		var data map[string]json.RawMessage
		if json.Unmarshal(inner, &data) == nil {
			if id := jsonID(data["id"]); id != "" {
				return id, "id"
			}
		}
	}
	sum := sha256.Sum256(a.body)
	return "body:" + hex.EncodeToString(sum[:8]), "body"
}

// jsonID returns a JSON string or number as text, or "".
func jsonID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// describe summarises an answer for the observed column.
func (a answer) describe() string {
	if a.err != nil {
		return "no answer: " + shortError(a.err)
	}
	s := fmt.Sprint(a.status)
	if id, how := a.identity(); how != "body" && a.ok() {
		s += " " + how + " " + id
	}
	if a.replayed {
		s += " (replayed)"
	}
	return s
}

// excerpt returns the start of an answer's body on one line, at most n
// bytes of it.
func excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return cell(s)
}

func shortError(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// requests is how many requests run sends.
func (p *prober) requests() int {
	n := p.copies + 2
	if p.quoted != nil {
		n++
	}
	if p.otherBody != nil {
		n++
	}
	return n
}

// errNotAccepted: the request itself failed, so there is nothing to probe.
type errNotAccepted struct {
	answers []answer
	place   keyPlace
	keyLen  int
}

func (e *errNotAccepted) Error() string {
	var parts []string
	for _, a := range e.answers {
		parts = append(parts, a.describe())
	}
	msg := "the API did not accept the request (" + strings.Join(parts, ", ")
	for _, a := range e.answers {
		if a.err == nil && len(a.body) > 0 {
			msg += "; the first said: " + excerpt(a.body, 160)
			break
		}
	}
	msg += ")"
	if e.place.profile != nil {
		msg += fmt.Sprintf(" with a key of %d characters %s, as the %s profile says it takes;", e.keyLen, e.place.where(), e.place.profile.Name)
	} else {
		msg += ";"
	}
	return msg + " fix the request (-X, -d, -H) so that it succeeds, then check again"
}

// run probes the API. It returns an *errNotAccepted if none of the first
// copies succeeded.
func (p *prober) run(ctx context.Context) (*checkReport, error) {
	rep := &checkReport{
		Method: p.method, URL: p.url, KeyHeader: p.place.header, Requests: p.requests(),
		KeyLength: len(p.key), Profile: newProfileJSON(p.place.profile),
	}
	if p.place.field != nil {
		rep.KeyField = p.place.field.String()
	}

	// Several copies at once, with the fresh key: they are also the first
	// request, whose answers the other probes compare with.
	first := p.burst(ctx, p.key, p.copies)
	execs := map[string]bool{} // identities of the executions seen
	var succeeded []answer
	for _, a := range first {
		if a.ok() {
			succeeded = append(succeeded, a)
		}
	}
	if len(succeeded) == 0 {
		return nil, &errNotAccepted{first, p.place, len(p.key)}
	}
	_, rep.ToldApartBy = succeeded[0].identity()
	for _, a := range succeeded {
		if id, _ := a.identity(); !a.replayed || len(execs) == 0 {
			execs[id] = true
		}
	}
	if p.place.profile != nil {
		rep.add(probeResult{
			Probe:    fmt.Sprintf("key of %d characters", len(p.key)),
			Expected: "taken: the " + p.place.profile.Name + " profile's longest",
			Observed: "taken", Verdict: pass,
		})
	}
	rep.add(p.judgeBurst(first, execs))

	again := p.sendWith(ctx, p.client, p.key, p.body)
	row, same := judgeRepeat(again, execs)
	rep.add(row)
	rep.add(judgeReplayMark(again, same, p.place.profile))

	if p.quoted != nil {
		rep.add(judgeQuoted(p.sendWith(ctx, p.quoted, p.key, p.body), execs, len(p.key)+2, p.place.maxLen))
	} else {
		rep.add(probeResult{Probe: `key quoted ("key")`, Expected: "the same key: the first answer",
			Observed: "not sent: a key in the body has no quoted form", Verdict: skip})
	}

	if p.otherBody != nil {
		rep.add(judgeOtherBody(p.sendWith(ctx, p.client, p.key, p.otherBody), execs))
	} else {
		rep.add(probeResult{Probe: "same key, different body", Expected: "422: key reused",
			Observed: "not sent: the request has no body to change (give --other-data)", Verdict: skip})
	}

	rep.add(judgeNoKey(p.send(ctx, "", p.body)))
	return rep, nil
}

// newProbeClient returns the HTTP client idem check sends with: no
// retries, no redirects, a timeout per request, and a connection per copy.
func newProbeClient(copies int, timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = copies
	return &http.Client{
		Transport:     t,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
