package server_test

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemhq/idem/server"
)

// req describes a request for fingerprinting.
type req struct {
	method, target, contentType, body string
}

func (r req) fingerprint() string {
	hr := httptest.NewRequest(r.method, r.target, nil)
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	return server.Fingerprint(hr, []byte(r.body))
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	const js = "application/json"
	tests := []struct {
		name string
		a, b req
		same bool
	}{
		{"identical", req{"POST", "/orders", js, `{"a":1}`}, req{"POST", "/orders", js, `{"a":1}`}, true},
		{"json member order", req{"POST", "/o", js, `{"a":1,"b":{"x":true,"y":null}}`}, req{"POST", "/o", js, `{"b":{"y":null,"x":true},"a":1}`}, true},
		{"json whitespace", req{"POST", "/o", js, `{"a": [1, 2]}`}, req{"POST", "/o", js, " {\n\t\"a\":[1,2]\r\n} "}, true},
		{"json string escapes", req{"POST", "/o", js, `{"a":"\u00e9\/\u0041"}`}, req{"POST", "/o", js, `{"a":"é/A"}`}, true},
		{"json duplicate members in another order", req{"POST", "/o", js, `{"a":1,"a":2}`}, req{"POST", "/o", js, `{"a":2,"a":1}`}, false},
		{"json names equal under case folding", req{"POST", "/o", js, `{"Amount":100,"amount":1}`}, req{"POST", "/o", js, `{"amount":1,"Amount":100}`}, false},
		{"json duplicates count byte for byte", req{"POST", "/o", js, `{"a":1,"a":2}`}, req{"POST", "/o", js, `{"a":1,"a":2}`}, true},
		{"json +json type", req{"POST", "/o", "application/vnd.api+json", `{"a":1,"b":2}`}, req{"POST", "/o", js, `{"b":2,"a":1}`}, true},
		{"json type with charset and case", req{"POST", "/o", "Application/JSON; charset=utf-8", `{"a":1,"b":2}`}, req{"POST", "/o", js, `{"b":2,"a":1}`}, true},
		{"json different value", req{"POST", "/o", js, `{"a":1}`}, req{"POST", "/o", js, `{"a":2}`}, false},
		{"json number literal kept", req{"POST", "/o", js, `{"a":1}`}, req{"POST", "/o", js, `{"a":1.0}`}, false},
		{"json array order kept", req{"POST", "/o", js, `[1,2]`}, req{"POST", "/o", js, `[2,1]`}, false},
		{"json key moved between objects", req{"POST", "/o", js, `{"a":{"b":1},"c":2}`}, req{"POST", "/o", js, `{"a":{"b":1,"c":2}}`}, false},
		{"invalid json is raw", req{"POST", "/o", js, `{"a":1,}`}, req{"POST", "/o", js, `{"a": 1,}`}, false},
		{"invalid json same bytes", req{"POST", "/o", js, `{"a":1,}`}, req{"POST", "/o", js, `{"a":1,}`}, true},
		{"json vs raw of the same text", req{"POST", "/o", js, `{"a":1}`}, req{"POST", "/o", "text/plain", `{"a":1}`}, false},
		{"non-json member order", req{"POST", "/o", "text/plain", `{"a":1,"b":2}`}, req{"POST", "/o", "text/plain", `{"b":2,"a":1}`}, false},
		{"no content type is raw", req{"POST", "/o", "", `{"a":1,"b":2}`}, req{"POST", "/o", "", `{"b":2,"a":1}`}, false},
		{"query order", req{"POST", "/o?a=1&b=2", "", ""}, req{"POST", "/o?b=2&a=1", "", ""}, true},
		{"query escaping", req{"POST", "/o?a=x+y", "", ""}, req{"POST", "/o?a=x%20y", "", ""}, true},
		{"query repeated values keep order", req{"POST", "/o?a=1&a=2", "", ""}, req{"POST", "/o?a=2&a=1", "", ""}, false},
		{"query value", req{"POST", "/o?a=1", "", ""}, req{"POST", "/o?a=2", "", ""}, false},
		{"query present", req{"POST", "/o?a=", "", ""}, req{"POST", "/o", "", ""}, false},
		{"path", req{"POST", "/orders/1", "", ""}, req{"POST", "/orders/2", "", ""}, false},
		{"escaped slash in path", req{"POST", "/a%2Fb", "", ""}, req{"POST", "/a/b", "", ""}, false},
		{"method", req{"POST", "/o", "", "x"}, req{"PATCH", "/o", "", "x"}, false},
		{"host ignored", req{"POST", "http://a.example/o", "", "x"}, req{"POST", "http://b.example/o", "", "x"}, true},
		{"field boundaries", req{"POST", "/o?ab=c", "", ""}, req{"POST", "/o?a=bc", "", ""}, false},
		{"body", req{"POST", "/o", "", "x"}, req{"POST", "/o", "", "y"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := tt.a.fingerprint(), tt.b.fingerprint()
			assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), a)
			if tt.same {
				assert.Equal(t, a, b)
			} else {
				assert.NotEqual(t, a, b)
			}
		})
	}
}

func TestFingerprintDeepJSONFallsBack(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	a := req{"POST", "/o", "application/json", deep}.fingerprint()
	b := req{"POST", "/o", "text/plain", deep}.fingerprint()
	assert.Equal(t, a, b, "JSON nested too deep is fingerprinted as raw bytes")
}

func TestFingerprintConcurrent(t *testing.T) {
	t.Parallel()
	want := req{"POST", "/o?z=1&a=2", "application/json", `{"b":[1,{"d":2,"c":3}],"a":"x"}`}.fingerprint()
	done := make(chan string)
	for range 8 {
		go func() {
			var got string
			for range 200 {
				got = req{"POST", "/o?a=2&z=1", "application/json", `{"a":"x","b":[1,{"c":3,"d":2}]}`}.fingerprint()
			}
			done <- got
		}()
	}
	for range 8 {
		assert.Equal(t, want, <-done)
	}
}
