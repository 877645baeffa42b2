// This file holds the case for header fields sent several times.

package storetest

import (
	"net/http"
	"testing"

	"github.com/idemhq/idem/server"
)

// testRepeatedFieldsKeptApart: a field sent several times (Set-Cookie,
// Link) is stored line by line and reported so, never joined: their
// values hold commas (a cookie's Expires date, a Link list), so lines
// joined with commas could not be told apart again. An empty value
// stays a line of its own.
func testRepeatedFieldsKeptApart(t *testing.T, f fixture) {
	k := f.key()
	want := server.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{
			"Set-Cookie": {"a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/", "b=2; HttpOnly", ""},
			"Link":       {`</orders/42>; rel="self"`, `</orders?page=2>; rel="next", </docs>; rel="help"`},
			"Location":   {"/orders/42"},
		},
		Body: []byte(`{"id":42}`),
	}
	f.complete(k, "fp", want)
	c := f.claim(k, "fp", longLease)
	requireCompleted(t, c, "fp", want)
	for name, vals := range want.Header {
		equal(t, len(vals), len(c.Record.Response.Header[name]), "lines of "+name)
	}
}
