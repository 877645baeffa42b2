package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// parseHeader reads one -H argument, "Name: value" as curl takes it. The
// name must be an HTTP token; the value may be empty ("Name:") and loses
// its surrounding spaces.
func parseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", fmt.Errorf("header %q: want \"Name: value\"", s)
	}
	if !validToken(name) {
		return "", "", fmt.Errorf("header %q: %q is not a valid header name", s, name)
	}
	value = strings.Trim(value, " \t")
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "", "", fmt.Errorf("header %q: the value has a control character", name)
		}
	}
	return http.CanonicalHeaderKey(name), value, nil
}

// parseHeaderFromEnv reads one --header-from-env argument, NAME=VAR: the
// header NAME takes the value of the environment variable VAR, which must
// be set and not empty.
func parseHeaderFromEnv(s string, getenv func(string) string) (name, value string, err error) {
	name, v, ok := strings.Cut(s, "=")
	if !ok || v == "" {
		return "", "", fmt.Errorf("--header-from-env %q: want NAME=VARIABLE", s)
	}
	value = getenv(v)
	if value == "" {
		return "", "", fmt.Errorf("--header-from-env %q: the environment variable %s is not set", s, v)
	}
	return parseHeader(name + ": " + value)
}

// headers turns -H and --header-from-env arguments into a header.
func headers(h []string, fromEnv []string, getenv func(string) string) (http.Header, error) {
	out := http.Header{}
	for _, s := range h {
		k, v, err := parseHeader(s)
		if err != nil {
			return nil, usagef("%v", err)
		}
		out.Add(k, v)
	}
	for _, s := range fromEnv {
		k, v, err := parseHeaderFromEnv(s, getenv)
		if err != nil {
			return nil, usagef("%v", err)
		}
		out.Add(k, v)
	}
	return out, nil
}

// validToken reports whether s is an RFC 9110 token, as a header name must
// be.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// maxBody bounds a body read from a file or standard input.
const maxBody = 8 << 20

// readData reads a -d argument as curl does: "@file" is the file's bytes,
// "@-" standard input's, anything else the argument itself.
func readData(d string, stdin io.Reader) ([]byte, error) {
	name, ok := strings.CutPrefix(d, "@")
	if !ok {
		return []byte(d), nil
	}
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("%s: body over %d bytes", d, maxBody)
	}
	return b, nil
}

// parseURL accepts an absolute http or https URL.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, usagef("URL %q: want an absolute http:// or https:// URL", s)
	}
	return u, nil
}

// defaultContentType is the Content-Type of a -d body when no -H sets one:
// application/json for a body that looks like JSON, else curl's
// application/x-www-form-urlencoded.
func defaultContentType(body []byte) string {
	s := strings.TrimSpace(string(body))
	if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
		return "application/json"
	}
	return "application/x-www-form-urlencoded"
}

// dataFlag returns the body -d gives (nil without -d), and sets h's
// Content-Type to what the body looks like if h has none.
func (a *app) dataFlag(cmd *cobra.Command, data string, h http.Header) ([]byte, error) {
	if !cmd.Flags().Changed("data") {
		return nil, nil
	}
	body, err := readData(data, a.stdin)
	if err != nil {
		return nil, err
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", defaultContentType(body))
	}
	return body, nil
}
