package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Fingerprints are stored with records and compared with a retry's, which
// may arrive after an upgrade: these values, computed by an earlier
// release, must never change.
func TestGoldenFingerprints(t *testing.T) {
	t.Parallel()
	const js = "application/json"
	for _, g := range []struct {
		r    req
		want string
	}{
		{req{"POST", "/charges", js, `{"amount":1000,"currency":"usd"}`}, "939c385d96ecea29867cf1c9c330b6e0ea66fc7712e88ab9e6007256a9a9f3b5"},
		{req{"POST", "/charges", js, `{ "currency":"usd", "amount":1000 }`}, "939c385d96ecea29867cf1c9c330b6e0ea66fc7712e88ab9e6007256a9a9f3b5"},
		{req{"POST", "/o?z=1&a=2&a=1", js, `{"b":[1,{"d":2,"c":3}],"a":"x\u00e9"}`}, "8ce45a146f6aa8ed64be7eaa03c980b2311845d8266274c85f0cdfe964871dd1"},
		{req{"PATCH", "/o/1", "text/plain", "raw \x00\xff bytes"}, "aeb433d6748537542740157545503e1b18eba07f757b968145b9ddc88cf0c8ee"},
		{req{"POST", "/q?%zz", "", ""}, "0335754600842c286f5b50c74df898e5437c5424687cd51d8d47d56ebabebe80"},
		{req{"POST", "/dup", js, `{"a":1,"a":2}`}, "6b9a6441f37c1ff6479d7e1d101aadb91ba8f0f5a20af2b77c81dcd8c37caa3c"},
	} {
		got := g.r.fingerprint()
		assert.Equal(t, g.want, got, "%+v", g.r)
	}
}
