package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/bodykey"
)

type sendFlags struct {
	method    string
	data      string
	header    []string
	key, name string
	place     keyFlags
	quote     bool
	attempts  int
	timeout   time.Duration
}

func newSendCmd(a *app) *cobra.Command {
	var f sendFlags
	cmd := &cobra.Command{
		Use:   "send [-X METHOD] URL [-d BODY|@FILE] [-H 'Name: value'...]",
		Short: "Send one keyed, retried and journaled request, like curl",
		Long: `send sends one request as an idem operation: under one idempotency key
(--key, the key bound to --name in the journal, or a fresh UUIDv7), with
the same bytes on every attempt, retried on transport errors and on 408,
409, 425, 429, 500, 502, 503 and 504. With a journal (--journal or
$` + journalEnv + `) the operation is on disk before its first attempt: if send
gives up, or is killed, "idem resume" finishes it, and sending the same
key again answers from the journal.

--profile NAME follows that API's conventions: where the key goes (square
puts it in the JSON body's idempotency_key, which a body with a key of
its own there keeps), how long a key may be, the server's key retention,
its retry hints, the headers it requires and how it says a key was
reused or a request replayed. --header-name or --body-key moves the key.

It prints the key, the status, the attempts and whether the server
replayed an earlier answer, then the response body. Credentials given with
-H (Authorization, Cookie, Proxy-Authorization) are sent but never
journaled.`,
		Example: `  idem send -X POST http://127.0.0.1:8080/charges -H 'X-Client-Id: acme' \
      -d '{"amount": 1000, "currency": "usd"}' --journal app.journal
  idem send http://127.0.0.1:8080/charges -d @charge.json --key order-1
  idem send --profile stripe -H "Authorization: Bearer $STRIPE_TEST_KEY" \
      -d 'amount=1000&currency=usd&payment_method=pm_card_visa' https://api.stripe.com/v1/payment_intents`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.send(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.method, "request", "X", "", "request `METHOD` (default POST with a body, else GET)")
	fl.StringVarP(&f.data, "data", "d", "", "request body: the `BODY` itself, @FILE for a file's bytes, @- for standard input")
	fl.StringArrayVarP(&f.header, "header", "H", nil, "request header `'Name: value'` (repeatable)")
	fl.StringVar(&f.key, "key", "", "idempotency `KEY` to send (default: a fresh UUIDv7)")
	fl.StringVar(&f.name, "name", "", "send under the key bound to this operation `NAME` in the journal")
	fl.BoolVar(&f.quote, "quote-key", false, `send the key as a quoted Structured Field string ("abc")`)
	fl.IntVar(&f.attempts, "attempts", 5, "most attempts, the first included")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after this long, leaving the operation pending (default none)")
	f.place.add(cmd)
	return cmd
}

// sendResult is send's --json document.
type sendResult struct {
	Key         string      `json:"key"`
	Name        string      `json:"name,omitempty"`
	Status      int         `json:"status,omitempty"`
	Attempts    int         `json:"attempts"`
	Replayed    bool        `json:"replayed"`
	FromJournal bool        `json:"from_journal"`
	Header      http.Header `json:"header,omitempty"`
	Body        *string     `json:"body,omitempty"`
	BodyBase64  []byte      `json:"body_base64,omitempty"`
	Error       string      `json:"error,omitempty"`
}

func (a *app) send(cmd *cobra.Command, rawURL string, f sendFlags) error {
	t, err := a.newTarget(rawURL, f.header, &f.place)
	if err != nil {
		return err
	}
	u, h, opts, place := t.url, t.header, t.opts, t.place
	if v := h.Values(place.header); place.field == nil && len(v) > 0 {
		// The client would refuse it unsent; say so as what it is.
		if len(v) > 1 {
			return usagef("-H %s given %d times: a request has one key", place.header, len(v))
		}
		if _, err := idem.ParseKey(v[0]); err != nil {
			return usagef("-H %s: %s", place.header, unprefixed(err))
		}
	}
	if f.quote && place.field != nil {
		return usagef("--quote-key: a key in the body has no quoted form")
	}
	if f.key != "" && f.name != "" {
		return usagef("--key and --name exclude each other: a named operation's key is the journal's")
	}
	if f.key != "" {
		if err := idem.ValidateKey(f.key); err != nil {
			return usagef("--key: %s", strings.TrimPrefix(err.Error(), "idem: "))
		}
		if len(f.key) > place.maxLen {
			return usagef("--key: %d characters, over the %d the %s profile allows", len(f.key), place.maxLen, place.profile.Name)
		}
	}
	if f.attempts < 1 {
		return usagef("--attempts must be at least 1")
	}
	body, err := a.dataFlag(cmd, f.data, h)
	if err != nil {
		return err
	}
	held, err := place.heldKey(body, "-d")
	if err != nil {
		return err
	}
	if f.key != "" && place.field != nil {
		switch {
		case held == f.key:
		case held != "":
			return usagef("--key %q: the body's %s holds another key, %q", f.key, place.field, held)
		default:
			if body, err = bodykey.Put(body, place.field, f.key); err != nil {
				return usagef("--key: %s", strings.TrimPrefix(err.Error(), "idem: "))
			}
		}
	}
	if f.method == "" {
		f.method = http.MethodGet
		if body != nil {
			f.method = http.MethodPost
		}
	}
	opts.QuoteKey, opts.MaxAttempts = f.quote, f.attempts
	path, jerr := a.journal()
	switch {
	case jerr == nil:
		j, err := openJournalAt(path, true)
		if err != nil {
			return err
		}
		defer j.Close()
		opts.Journal = j
	case f.name != "":
		return usagef("--name needs a journal: pass --journal PATH or set %s", journalEnv)
	}
	c, err := idem.New(opts)
	if err != nil {
		return usagef("%v", err)
	}
	ctx := cmd.Context()
	if f.timeout > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, f.method, u.String(), bytes.NewReader(body))
	if err != nil {
		return usagef("%v", err)
	}
	req.Header = h
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if f.key != "" && place.field == nil {
		req.Header.Set(place.header, f.key)
	}
	var resp *idem.Response
	if f.name != "" {
		resp, err = c.DoNamed(f.name, req)
	} else {
		resp, err = c.Do(req)
	}
	return a.printSend(resp, err, f.name, opts.Journal != nil)
}

func (a *app) printSend(resp *idem.Response, err error, name string, journaled bool) error {
	var e *idem.Error
	if err != nil && !errors.As(err, &e) {
		return err
	}
	var r sendResult
	if e != nil {
		r = sendResult{Key: e.Key, Name: name, Status: e.StatusCode, Attempts: e.Attempts, Header: e.Header, Error: describe(e)}
		setBody(&r, e.Body)
	} else {
		r = sendResult{Key: resp.Key, Name: name, Status: resp.StatusCode, Attempts: resp.Attempts,
			Replayed: resp.Replayed, FromJournal: resp.FromJournal, Header: resp.Header}
		setBody(&r, resp.Body)
	}
	if a.json {
		if err := a.writeJSON(r); err != nil {
			return err
		}
	} else {
		t := newTable(a.stdout, "key", r.Key)
		if name != "" {
			t.row("name", name)
		}
		status := "no answer"
		if r.Status != 0 {
			status = fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status))
		}
		t.row("status", status)
		t.row("attempts", fmt.Sprint(r.Attempts))
		t.row("replayed", yesNo(r.Replayed))
		if r.FromJournal {
			t.row("answered", "from the journal, without the network")
		}
		if err := t.flush(); err != nil {
			return err
		}
		var b []byte
		if e != nil {
			b = e.Body
		} else {
			b = resp.Body
		}
		if len(b) > 0 {
			fmt.Fprintln(a.stdout)
			writeBody(a.stdout, b, false)
		}
	}
	if e == nil {
		return nil
	}
	msg := describe(e)
	if journaled && stillPending(e) {
		msg += "; the operation is pending in the journal: idem resume finishes it"
	}
	return &codeError{code: exitError, err: errors.New(msg)}
}

// setBody puts b in r as text, or as base64 when it is not UTF-8.
func setBody(r *sendResult, b []byte) {
	if len(b) == 0 {
		return
	}
	if utf8.Valid(b) {
		s := string(b)
		r.Body = &s
		return
	}
	r.BodyBase64 = b
}

// stillPending reports whether an operation that ended in e is pending in
// the journal: it was journaled (it has a key: a request refused before,
// such as one whose body is too large, has none) and has no final answer.
func stillPending(e *idem.Error) bool {
	for _, final := range []error{idem.ErrKeyReused, idem.ErrExpired, idem.ErrAbandoned, idem.ErrInvalidKey,
		idem.ErrJournalCorrupt, idem.ErrJournalClosed} {
		if errors.Is(e, final) {
			return false
		}
	}
	return e.Key != ""
}
