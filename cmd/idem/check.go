package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

type checkFlags struct {
	method    string
	data      string
	otherData string
	header    []string
	key       keyFlags
	copies    int
	timeout   time.Duration
	yes       bool
}

func newCheckCmd(a *app) *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check [-X METHOD] URL [-d BODY|@FILE] [-H 'Name: value'...]",
		Short: "Check whether an HTTP API honours idempotency keys",
		Long: `check sends a request you give, under idempotency keys, in the ways a
retrying client does, and says whether the API would execute a retried
request twice. It makes real requests: it says how many before it starts
and sends them only with --yes or your confirmation at the terminal. Point
it at a test account or a sandbox.

With one fresh key it sends several copies at once (one execution, the
others 409 or the same answer?), then the same request again (the first
answer, marked Idempotent-Replayed?), the key in quoted Structured Field
form ("key": the same key?), the key with a different body (refused with
422?), and the request without a key (refused with 400?). It tells two
executions apart by the Location header, else an "id" member of a JSON
body, else the whole body.

With --profile NAME it follows that API's conventions: the key's place
(a header, or a field of the JSON body, which must then be an object), a
fresh key exactly as long as the API says it takes, the headers it
requires (give them with -H), and the way it says a key was reused or a
request replayed. The report starts with the profile's facts and the
documents they come from. --header-name or --body-key moves the key.

It prints a verdict table and exits 3 if the API can execute one keyed
request more than once (a FAIL), 0 otherwise; WARN rows are weaknesses a
client can live with.`,
		Example: `  idem check -H 'X-Client-Id: acme' -d '{"amount": 1000, "currency": "usd"}' \
      http://127.0.0.1:8080/charges
  idem check --profile square -H "Authorization: Bearer $SQUARE_SANDBOX_TOKEN" \
      -d @payment.json https://connect.squareupsandbox.com/v2/payments`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.check(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.method, "request", "X", http.MethodPost, "request `METHOD`")
	fl.StringVarP(&f.data, "data", "d", "", "request body: the `BODY` itself, @FILE for a file's bytes, @- for standard input")
	fl.StringVar(&f.otherData, "other-data", "", "the different `BODY` sent under the used key (default: the body with its first number, or string, changed)")
	fl.StringArrayVarP(&f.header, "header", "H", nil, "request header `'Name: value'` (repeatable)")
	fl.IntVar(&f.copies, "copies", 5, "how many copies to send at once (at least 2)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of each request")
	fl.BoolVarP(&f.yes, "yes", "y", false, "send the requests without asking")
	f.key.add(cmd)
	return cmd
}

func (a *app) check(cmd *cobra.Command, rawURL string, f checkFlags) error {
	t, err := a.newTarget(rawURL, f.header, &f.key)
	if err != nil {
		return err
	}
	u, h, opts, place := t.url, t.header, t.opts, t.place
	if f.copies < 2 {
		return usagef("--copies must be at least 2")
	}
	body, err := a.dataFlag(cmd, f.data, h)
	if err != nil {
		return err
	}
	if body, err = place.keyless(body, "-d"); err != nil {
		return err
	}
	p, err := newProber(f.method, u.String(), body, h, place, opts, f.copies, f.timeout)
	if err != nil {
		return err
	}
	how := ""
	if cmd.Flags().Changed("other-data") {
		if p.otherBody, err = readData(f.otherData, a.stdin); err != nil {
			return err
		}
		if p.otherBody, err = place.keyless(p.otherBody, "--other-data"); err != nil {
			return err
		}
		if bytes.Equal(p.otherBody, body) {
			return usagef("--other-data is the same body as --data")
		}
	} else {
		p.otherBody, how = otherBody(body, h.Get("Content-Type"))
	}
	if err := a.confirmCheck(p, how, f.yes); err != nil {
		return err
	}
	rep, err := p.run(cmd.Context())
	if err != nil {
		return err
	}
	if a.json {
		if err := a.writeJSON(rep); err != nil {
			return err
		}
	} else if err := a.printCheck(rep); err != nil {
		return err
	}
	if rep.Verdict == fail {
		if !a.json {
			fmt.Fprintln(a.stderr, "idem: this API can execute one keyed request more than once: retrying against it is not safe")
		}
		return &codeError{code: exitUnsafe}
	}
	return nil
}

// confirmCheck says what check is about to send and asks, unless --yes.
func (a *app) confirmCheck(p *prober, how string, yes bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "idem check will send %d real %s requests to %s:\n", p.requests(), p.method, p.url)
	fmt.Fprintf(&b, "  %d copies at once under one fresh key %s, then one by one: the same request again,\n  ", p.copies, p.place.where())
	if p.quoted != nil {
		b.WriteString("the key quoted, ")
	}
	if p.otherBody != nil {
		b.WriteString("the key with a different body")
		if how != "" {
			b.WriteString(" (" + how + ")")
		}
		b.WriteString(", ")
	}
	b.WriteString("and no key.\n")
	fmt.Fprintf(&b, "An API that honours keys executes 1 of them (2 if it runs requests without a key);\none that ignores keys executes all %d.\n", p.requests())
	return a.confirm(yes, b.String(), "Send them?", "check")
}

func (a *app) printCheck(rep *checkReport) error {
	key := "key header " + rep.KeyHeader
	if rep.KeyField != "" {
		key = "key in the JSON body's " + rep.KeyField
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s, %d characters; %d requests; executions told apart by %s)\n",
		rep.Method, rep.URL, key, rep.KeyLength, rep.Requests, toldApart(rep.ToldApartBy))
	if rep.Profile != nil {
		writeProfile(&b, rep.Profile)
	}
	b.WriteString("\n")
	if _, err := io.WriteString(a.stdout, b.String()); err != nil {
		return err
	}
	t := newTable(a.stdout, "PROBE", "EXPECTED", "OBSERVED", "VERDICT")
	for _, r := range rep.Probes {
		t.row(r.Probe, r.Expected, r.Observed, r.Verdict)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\nverdict: %s\n", rep.Verdict)
	return nil
}

func toldApart(how string) string {
	switch how {
	case "Location":
		return "the Location header"
	case "id":
		return `the JSON body's "id"`
	}
	return "the whole body"
}

// otherBody returns body changed so that it is a different request that
// still makes sense to the API, and says how it changed it: in a JSON
// object, the first number (in key order) plus one, else the first string
// with "-2" appended, else a new member; in a form, a new field. It
// returns nil for an empty body, or one it cannot change safely.
func otherBody(body []byte, contentType string) ([]byte, string) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ""
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&obj) == nil && obj != nil {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		how := ""
		for _, k := range keys {
			if n, ok := obj[k].(json.Number); ok {
				if v, ok := new(big.Float).SetString(n.String()); ok {
					v.Add(v, big.NewFloat(1))
					obj[k] = json.Number(v.Text('f', -1))
					how = fmt.Sprintf("%s %s → %s", k, n, obj[k])
					break
				}
			}
		}
		for _, k := range keys {
			if s, ok := obj[k].(string); ok && how == "" {
				obj[k] = s + "-2"
				how = fmt.Sprintf("%s %q → %q", k, s, obj[k])
			}
		}
		if how == "" {
			obj["idem_check"] = 2
			how = `"idem_check": 2 added`
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, ""
		}
		return b, how
	}
	if strings.HasPrefix(contentType, "application/x-www-form-urlencoded") && !json.Valid(body) {
		return append(bytes.Clone(body), "&idem_check=2"...), "idem_check=2 added"
	}
	return nil, ""
}

// errNotConfirmed: the person at the terminal did not say yes.
var errNotConfirmed = errors.New("not confirmed; nothing was sent")
