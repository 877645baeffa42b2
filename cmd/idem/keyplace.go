package main

// This file holds where an API takes its idempotency key and which of its
// conventions a command follows: the --profile, --header-name and
// --body-key flags check, send and resume share.

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/bodykey"
)

// defaultKeyHeader is the key header without a profile or --header-name.
const defaultKeyHeader = "Idempotency-Key"

// keyFlags are the flags that name an API's conventions.
type keyFlags struct {
	profile    string
	headerName string
	bodyKey    string
}

// add registers the flags on cmd.
func (f *keyFlags) add(cmd *cobra.Command) {
	names := profileNames()
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "", "follow this `API`'s idempotency conventions: "+strings.Join(names, ", "))
	fl.StringVar(&f.headerName, "header-name", "", "the idempotency key header's `NAME` (default: the profile's, else "+defaultKeyHeader+")")
	fl.StringVar(&f.bodyKey, "body-key", "", "put the key in this `FIELD` of the JSON body instead of a header (payment.idempotency_key for a nested one)")
	cmd.RegisterFlagCompletionFunc("profile", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
}

// profileNames names the profiles --profile takes.
func profileNames() []string {
	var names []string
	for _, p := range idem.Profiles() {
		names = append(names, p.Name)
	}
	return names
}

// keyPlace is where the key goes and what the API expects of it, the flags
// resolved.
type keyPlace struct {
	// profile is the --profile, nil without one.
	profile *idem.Profile
	// header is the key header's canonical name, "" with a body key.
	header string
	// field is the body field the key goes in, nil with a header.
	field bodykey.Path
	// maxLen is the longest key the API takes.
	maxLen int
}

// resolve checks the flags and returns the client options they give (the
// profile, with any override of the key's place) and the place itself.
func (f *keyFlags) resolve() (idem.Options, keyPlace, error) {
	var o idem.Options
	k := keyPlace{maxLen: idem.MaxKeyLen}
	if f.profile != "" {
		p, ok := idem.ProfileNamed(f.profile)
		if !ok {
			return o, k, usagef("--profile %q: no such profile; idem knows %s", f.profile, strings.Join(profileNames(), ", "))
		}
		o.Profile, k.profile = p, &p
		k.header = p.Header
		if p.BodyKey != "" {
			k.field, _ = bodykey.ParsePath(p.BodyKey) // the profiles' paths are valid
		}
		if p.MaxKeyLen > 0 {
			k.maxLen = p.MaxKeyLen
		}
	}
	switch {
	case f.headerName != "" && f.bodyKey != "":
		return o, k, usagef("--header-name and --body-key exclude each other: the key goes in one place")
	case f.headerName != "":
		if !validToken(f.headerName) {
			return o, k, usagef("--header-name %q is not a valid header name", f.headerName)
		}
		o.Header, k.header, k.field = f.headerName, f.headerName, nil
	case f.bodyKey != "":
		p, err := bodykey.ParsePath(f.bodyKey)
		if err != nil {
			return o, k, usagef("--body-key: %s", strings.TrimPrefix(err.Error(), "idem: "))
		}
		o.BodyKey, k.header, k.field = f.bodyKey, "", p
	}
	if k.header == "" && k.field == nil {
		k.header = defaultKeyHeader
	}
	k.header = http.CanonicalHeaderKey(k.header)
	return o, k, nil
}

// where says where the key goes, for a person.
func (k keyPlace) where() string {
	if k.field != nil {
		return "in the JSON body's " + k.field.String()
	}
	return "in the " + k.header + " header"
}

// checkHeaders refuses a request that lacks a header the profile requires:
// the API would refuse it, or the client would not send it.
func (k keyPlace) checkHeaders(h http.Header) error {
	if k.profile == nil {
		return nil
	}
	for _, name := range k.profile.RequiredHeaders {
		if h.Get(name) == "" {
			return usagef("the %s profile requires the %s header on every request: give it with -H '%s: VALUE'", k.profile.Name, name, name)
		}
	}
	return nil
}

// heldKey checks that body can carry the key in the body field, as a
// JSON object whose field is absent, null or a string, and returns the key
// the field holds ("" if none). flag names where the body came from, for
// the error. With a header key it accepts any body.
func (k keyPlace) heldKey(body []byte, flag string) (string, error) {
	if k.field == nil {
		return "", nil
	}
	if len(body) == 0 {
		return "", usagef("the key goes %s: give a JSON object body with %s", k.where(), flag)
	}
	held, _, err := bodykey.Get(body, k.field)
	if err != nil {
		return "", usagef("%s: %s (the key goes %s)", flag, strings.TrimPrefix(err.Error(), "idem: "), k.where())
	}
	return held, nil
}

// keyless returns body without the key its field holds, if any, having
// checked it as heldKey does: idem check puts a fresh key there.
func (k keyPlace) keyless(body []byte, flag string) ([]byte, error) {
	if _, err := k.heldKey(body, flag); err != nil || k.field == nil {
		return body, err
	}
	out, _ := bodykey.Without(body, k.field)
	return out, nil
}

// profileJSON is a profile's facts in --json output.
type profileJSON struct {
	Name            string   `json:"name"`
	Header          string   `json:"header,omitempty"`
	BodyKey         string   `json:"body_key,omitempty"`
	MaxKeyLen       int      `json:"max_key_len"`
	KeyRetention    string   `json:"key_retention"`
	RetryHints      []string `json:"retry_hints,omitempty"`
	RequiredHeaders []string `json:"required_headers,omitempty"`
	KeyReuse        string   `json:"key_reuse"`
	Replay          string   `json:"replay"`
	Sources         []string `json:"sources"`
}

func newProfileJSON(p *idem.Profile) *profileJSON {
	if p == nil {
		return nil
	}
	return &profileJSON{
		Name: p.Name, Header: p.Header, BodyKey: p.BodyKey, MaxKeyLen: p.MaxKeyLen,
		KeyRetention: spellDuration(p.KeyRetention), RetryHints: p.RetryHints, RequiredHeaders: p.RequiredHeaders,
		KeyReuse: recogniser(p.IsKeyReused != nil, "the API's own key-reuse error", "a 422, or a key-reuse error idem knows"),
		Replay:   recogniser(p.IsReplayed != nil, "the API's own answer to a repeat", "Idempotent-Replayed: true, if the API sends it"),
		Sources:  p.Sources,
	}
}

func recogniser(own bool, yes, no string) string {
	if own {
		return yes
	}
	return no
}

// writeProfile prints a profile's facts and sources, one per line.
func writeProfile(w *strings.Builder, p *profileJSON) {
	key := "header " + p.Header
	if p.BodyKey != "" {
		key = "JSON body field " + p.BodyKey
	}
	none := func(s []string) string {
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	}
	fmt.Fprintf(w, "profile %s:\n", p.Name)
	fmt.Fprintf(w, "  key:              %s, at most %d characters\n", key, p.MaxKeyLen)
	fmt.Fprintf(w, "  key retention:    %s\n", p.KeyRetention)
	fmt.Fprintf(w, "  key reuse:        %s\n", p.KeyReuse)
	fmt.Fprintf(w, "  replay:           %s\n", p.Replay)
	fmt.Fprintf(w, "  retry hints:      %s\n", none(p.RetryHints))
	fmt.Fprintf(w, "  required headers: %s\n", none(p.RequiredHeaders))
	for i, s := range p.Sources {
		label := ""
		if i == 0 {
			label = "sources:"
		}
		fmt.Fprintf(w, "  %-17s %s\n", label, s)
	}
}

// spellDuration writes d in whole days or hours when it is one, as
// retentions are published: "24 hours", "7 days", "1 hour".
func spellDuration(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return unit(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	}
	return d.String()
}

// target is the request check or send makes of its flags: the URL, the
// -H headers, where the key goes and the client options that follow.
type target struct {
	url    *url.URL
	header http.Header
	opts   idem.Options
	place  keyPlace
}

// newTarget reads rawURL, the -H arguments and the key flags, and refuses
// a request that lacks a header the profile requires.
func (a *app) newTarget(rawURL string, header []string, kf *keyFlags) (target, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return target{}, err
	}
	h, err := headers(header, nil, a.getenv)
	if err != nil {
		return target{}, err
	}
	opts, place, err := kf.resolve()
	if err != nil {
		return target{}, err
	}
	if err := place.checkHeaders(h); err != nil {
		return target{}, err
	}
	return target{u, h, opts, place}, nil
}
