package idem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Transport returns an http.RoundTripper that sends POST and PATCH
// requests, and any request already carrying the key header, through
// [Client.Do]: SDKs built on net/http get keys, journaling and retries
// without code changes. Other requests go straight to Options.Transport (with the
// attempt timeout).
//
// A final answer, or the last response of an operation that ran out of
// retries (a 503, say), is returned as an *http.Response with a nil error,
// never both; Idempotent-Replayed tells a replay apart. A failure with no
// response at all returns the *Error. The operation stays pending in the
// journal whenever Do would have returned an error.
func (c *Client) Transport() http.RoundTripper { return roundTripper{c} }

// HTTPClient returns an *http.Client whose transport is c.Transport().
func (c *Client) HTTPClient() *http.Client { return &http.Client{Transport: c.Transport()} }

type roundTripper struct{ c *Client }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	if req.Method != http.MethodPost && req.Method != http.MethodPatch && req.Header.Get(c.opts.Header) == "" {
		return c.rt.RoundTrip(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.StatusCode != 0 {
			return httpResponse(req, e.StatusCode, e.Header, e.Body), nil
		}
		return nil, err
	}
	return httpResponse(req, resp.StatusCode, resp.Header, resp.Body), nil
}

func httpResponse(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = make(http.Header)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
