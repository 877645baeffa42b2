package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemhq/idem"
)

// A prober sends the requests of idem check and compares their answers.
type prober struct {
	method    string
	url       string
	body      []byte
	header    http.Header // the user's headers, without the key
	keyHeader string
	copies    int
	otherBody []byte // the changed body; nil if there is none
	hc        *http.Client
}

// answer is what one request got.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// maxAnswer bounds how much of an answer's body is read.
const maxAnswer = 1 << 20

// send sends the request once with key as the key header's value (none if
// key is empty) and body.
func (p *prober) send(ctx context.Context, key string, body []byte) answer {
	req, err := http.NewRequestWithContext(ctx, p.method, p.url, bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Header = p.header.Clone()
	if key != "" {
		req.Header.Set(p.keyHeader, key)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
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

// replayed reports the server's Idempotent-Replayed: true.
func (a answer) replayed() bool {
	return a.err == nil && strings.EqualFold(a.header.Get("Idempotent-Replayed"), "true")
}

// ok reports a success: a 2xx or 3xx answer.
func (a answer) ok() bool { return a.err == nil && a.status >= 200 && a.status < 400 }

// busy reports an answer that says "not now, retry": the first request
// with the key is still running, or the server is overloaded. Nothing ran.
func (a answer) busy() bool {
	switch a.status {
	case http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return a.err == nil
	}
	return false
}

// identity names the execution an answer reports, and how it was found:
// the Location header, else an "id" member of a JSON object body (or of
// its "data" object), else a digest of the whole body.
func (a answer) identity() (id, how string) {
	if loc := a.header.Get("Location"); loc != "" {
		return loc, "Location"
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(a.body, &doc) == nil {
		if id := jsonID(doc["id"]); id != "" {
			return id, "id"
		}
		var data map[string]json.RawMessage
		if json.Unmarshal(doc["data"], &data) == nil {
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
	if a.replayed() {
		s += " (replayed)"
	}
	return s
}

func shortError(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// Verdicts, best first.
const (
	pass = "PASS"
	skip = "SKIP"
	warn = "WARN"
	fail = "FAIL"
)

func worse(a, b string) string {
	rank := map[string]int{pass: 0, skip: 0, warn: 1, fail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// probeResult is one row of the verdict table.
type probeResult struct {
	Probe    string       `json:"probe"`
	Expected string       `json:"expected"`
	Observed string       `json:"observed"`
	Verdict  string       `json:"verdict"`
	Answers  []answerJSON `json:"answers,omitempty"`
}

type answerJSON struct {
	Status   int    `json:"status,omitempty"`
	Replayed bool   `json:"replayed"`
	ID       string `json:"id,omitempty"`
	Error    string `json:"error,omitempty"`
}

func answersJSON(as ...answer) []answerJSON {
	out := make([]answerJSON, len(as))
	for i, a := range as {
		out[i] = answerJSON{Status: a.status, Replayed: a.replayed()}
		if a.err != nil {
			out[i].Error = a.err.Error()
		} else if a.ok() {
			out[i].ID, _ = a.identity()
		}
	}
	return out
}

// checkReport is idem check's result.
type checkReport struct {
	Method      string        `json:"method"`
	URL         string        `json:"url"`
	KeyHeader   string        `json:"key_header"`
	Requests    int           `json:"requests"`
	ToldApartBy string        `json:"told_apart_by"`
	Probes      []probeResult `json:"probes"`
	Verdict     string        `json:"verdict"`
}

// requests is how many requests run sends.
func (p *prober) requests() int {
	n := p.copies + 3
	if p.otherBody != nil {
		n++
	}
	return n
}

// errNotAccepted: the request itself failed, so there is nothing to probe.
type errNotAccepted struct{ answers []answer }

func (e *errNotAccepted) Error() string {
	var parts []string
	for _, a := range e.answers {
		parts = append(parts, a.describe())
	}
	return "the API did not accept the request (" + strings.Join(parts, ", ") +
		"); fix the request (-X, -d, -H) so that it succeeds, then check again"
}

// run probes the API. It returns an *errNotAccepted if none of the first
// copies succeeded.
func (p *prober) run(ctx context.Context) (*checkReport, error) {
	rep := &checkReport{Method: p.method, URL: p.url, KeyHeader: p.keyHeader, Requests: p.requests()}
	key := idem.NewKey()

	// Several copies at once, with one fresh key: they are also the first
	// request, whose answers the other probes compare with.
	first := p.burst(ctx, key, p.copies)
	execs := map[string]bool{} // identities of the executions seen
	var succeeded []answer
	for _, a := range first {
		if a.ok() {
			succeeded = append(succeeded, a)
		}
	}
	if len(succeeded) == 0 {
		return nil, &errNotAccepted{first}
	}
	_, rep.ToldApartBy = succeeded[0].identity()
	for _, a := range succeeded {
		if id, _ := a.identity(); !a.replayed() || len(execs) == 0 {
			execs[id] = true
		}
	}
	rep.add(p.judgeBurst(first, execs))

	again := p.send(ctx, key, p.body)
	row, same := judgeRepeat(again, execs)
	rep.add(row)
	rep.add(judgeReplayHeader(again, same))

	quoted := p.send(ctx, `"`+key+`"`, p.body)
	rep.add(judgeQuoted(quoted, execs))

	if p.otherBody != nil {
		rep.add(judgeOtherBody(p.send(ctx, key, p.otherBody), execs))
	} else {
		rep.add(probeResult{Probe: "same key, different body", Expected: "422: key reused",
			Observed: "not sent: the request has no body to change (give --other-data)", Verdict: skip})
	}

	rep.add(judgeNoKey(p.send(ctx, "", p.body)))
	return rep, nil
}

func (r *checkReport) add(row probeResult) {
	r.Probes = append(r.Probes, row)
	if r.Verdict == "" {
		r.Verdict = pass
	}
	r.Verdict = worse(r.Verdict, row.Verdict)
}

func (p *prober) judgeBurst(as []answer, execs map[string]bool) probeResult {
	row := probeResult{
		Probe:    fmt.Sprintf("%d copies at once, one key", len(as)),
		Expected: "1 execution; the others 409 or the same answer",
		Answers:  answersJSON(as...),
	}
	var busy, replays, fresh, other, lost int
	for _, a := range as {
		switch {
		case a.err != nil:
			lost++
		case a.ok() && a.replayed():
			replays++
		case a.ok():
			fresh++
		case a.busy():
			busy++
		default:
			other++
		}
	}
	_, how := as[0].identity()
	for _, a := range as {
		if a.ok() {
			_, how = a.identity()
			break
		}
	}
	executed := "executed"
	if len(execs) > 1 {
		executed = "different " + plural(how)
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(execs), executed}, {busy, "busy (409)"}, {replays, "replayed"}, {other, "other status"}, {lost, "no answer"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	row.Observed = strings.Join(parts, ", ")
	switch {
	case len(execs) > 1:
		row.Verdict = fail
		row.Observed = fmt.Sprintf("executed %d times: %s", len(execs), row.Observed)
	case fresh > 1 && how == "body":
		row.Verdict = warn
		row.Observed += fmt.Sprintf("; %d identical answers without an id or a replay mark: one execution or several cannot be told apart", fresh)
	case other > 0 || lost > 0:
		row.Verdict = warn
	default:
		row.Verdict = pass
	}
	return row
}

// plural names what tells executions apart, in the plural.
func plural(how string) string {
	switch how {
	case "Location":
		return "Locations"
	case "id":
		return "ids"
	}
	return "bodies"
}

// sameExecution reports whether a success a reports one of the executions
// seen. Without a Location or an id, equal bodies count as the same.
func sameExecution(a answer, execs map[string]bool) bool {
	id, _ := a.identity()
	return execs[id]
}

func judgeRepeat(a answer, execs map[string]bool) (row probeResult, same bool) {
	row = probeResult{Probe: "same request again", Expected: "the first answer again", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.ok() && sameExecution(a, execs):
		row.Verdict, same = pass, true
	case a.ok():
		row.Verdict = fail
		row.Observed += ": executed again"
	default:
		row.Verdict = warn
	}
	return row, same
}

func judgeReplayHeader(a answer, same bool) probeResult {
	row := probeResult{Probe: "replay marked", Expected: "Idempotent-Replayed: true"}
	switch {
	case !same:
		row.Verdict, row.Observed = skip, "no replay to look at"
	case a.replayed():
		row.Verdict, row.Observed = pass, "Idempotent-Replayed: true"
	default:
		row.Verdict, row.Observed = warn, "not marked: a client cannot tell a replay from a first execution"
	}
	return row
}

func judgeQuoted(a answer, execs map[string]bool) probeResult {
	row := probeResult{Probe: `key quoted ("key")`, Expected: "the same key: the first answer", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.ok() && sameExecution(a, execs):
		row.Verdict = pass
	case a.ok():
		row.Verdict = warn
		row.Observed += ": a different key here; send every attempt's key in one form"
	case a.status == http.StatusBadRequest:
		row.Verdict = warn
		row.Observed += ": the quoted form is refused; send keys bare"
	default:
		row.Verdict = warn
	}
	return row
}

func judgeOtherBody(a answer, execs map[string]bool) probeResult {
	row := probeResult{Probe: "same key, different body", Expected: "422: key reused", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.err == nil && a.status == http.StatusUnprocessableEntity:
		row.Verdict = pass
	case a.ok() && sameExecution(a, execs):
		row.Verdict = warn
		row.Observed += ": the first answer; the changed request was ignored without a word"
	case a.ok():
		row.Verdict = fail
		row.Observed += ": executed a different request under a used key"
	case a.err == nil && a.status >= 400 && a.status < 500 && !a.busy():
		row.Verdict = warn
		row.Observed += ": refused, but only 422 tells key reuse from a bad request"
	default:
		row.Verdict = warn
	}
	return row
}

func judgeNoKey(a answer) probeResult {
	row := probeResult{Probe: "no key", Expected: "400: key required", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.err == nil && (a.status == http.StatusBadRequest || a.status == http.StatusPreconditionRequired || a.status == http.StatusUnprocessableEntity):
		row.Verdict = pass
	case a.ok():
		row.Verdict = warn
		row.Observed += ": ran without a key, unprotected"
	default:
		row.Verdict = warn
	}
	return row
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
