package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// paymentRule keys a payment by its amount and currency; its customer
// must not change; anything else (a client timestamp, a trace ID) may.
var paymentRule = server.FingerprintRule{
	Select: []string{"/amount", "/currency"},
	Check:  []string{"/customer"},
}

func TestFingerprintRuleLetsIgnoredFieldsDiffer(t *testing.T) {
	t.Parallel()
	first := `{"amount":100,"currency":"eur","customer":"c1","sent_at":"10:00:00","trace":"a"}`
	retry := `{"trace":"b","sent_at":"10:00:05","customer":"c1","currency":"eur","amount":100}`
	for _, c := range []struct {
		name     string
		rule     server.FingerprintRule
		replayed bool
	}{
		{"the rule", paymentRule, true},
		// Without the rule a retry whose timestamp moved is another
		// request: the rule is what makes it a replay.
		{"the default", server.FingerprintRule{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, server.Options{Fingerprint: c.rule}, nil)
			key := newKey()
			a := h.do(call{key: key, body: first, contentType: jsonType})
			require.Equal(t, http.StatusCreated, a.status)
			b := h.do(call{key: key, body: retry, contentType: jsonType})
			if c.replayed {
				require.Equal(t, http.StatusCreated, b.status, b.body)
				assert.True(t, b.replayed())
				assert.Equal(t, a.body, b.body, "the replay answers the first request's outcome")
			} else {
				requireProblem(t, b, http.StatusUnprocessableEntity, server.ProblemKeyReused)
			}
			assert.EqualValues(t, 1, h.app.calls.Load(), "the work ran once")
		})
	}
}

func TestFingerprintRuleRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{Fingerprint: paymentRule}, nil)
	key := newKey()
	require.Equal(t, http.StatusCreated, h.do(call{key: key, contentType: jsonType,
		body: `{"amount":100,"currency":"eur","customer":"c1"}`}).status)

	keyed := h.do(call{key: key, contentType: jsonType, body: `{"amount":200,"currency":"eur","customer":"c1"}`})
	requireProblem(t, keyed, http.StatusUnprocessableEntity, server.ProblemKeyReused)
	assert.Contains(t, keyed.body, "different request")

	checked := h.do(call{key: key, contentType: jsonType, body: `{"amount":100,"currency":"eur","customer":"c2"}`})
	requireProblem(t, checked, http.StatusUnprocessableEntity, server.ProblemKeyReused)
	assert.Contains(t, checked.body, "must not change", "a checked field says so")

	absent := h.do(call{key: key, contentType: jsonType, body: `{"amount":100,"currency":"eur"}`})
	requireProblem(t, absent, http.StatusUnprocessableEntity, server.ProblemKeyReused)
	assert.Contains(t, absent.body, "must not change", "an absent checked field differs from a present one")

	assert.Contains(t, h.do(call{key: key, contentType: jsonType,
		body: `{"amount":100,"currency":"eur","customer":"c1","note":"x"}`}).header.Get(server.ReplayedHeader), "true")
	assert.EqualValues(t, 1, h.app.calls.Load())
}

func TestFingerprintRuleCountsWholeBodiesItCannotSelectFrom(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{Fingerprint: paymentRule}, nil)
	for name, c := range map[string]struct {
		contentType, first, retry string
	}{
		// encoding/json would read the last "amount" (or "Amount"): a
		// field the rule ignored could change what the handler charges.
		"a repeated member": {jsonType, `{"amount":1,"currency":"eur","amount":5}`, `{"amount":1,"currency":"eur","amount":9}`},
		"another case":      {jsonType, `{"amount":1,"currency":"eur","Amount":5}`, `{"amount":1,"currency":"eur","Amount":9}`},
		"not JSON":          {"text/plain", `amount=1 at 10:00`, `amount=1 at 10:01`},
		"invalid JSON":      {jsonType, `{"amount":1,"currency":"eur",`, `{"amount":1,"currency":"eur", `},
	} {
		key := newKey()
		require.Equal(t, http.StatusCreated, h.do(call{key: key, contentType: c.contentType, body: c.first}).status, name)
		requireProblem(t, h.do(call{key: key, contentType: c.contentType, body: c.retry}), http.StatusUnprocessableEntity, server.ProblemKeyReused)
		same := h.do(call{key: key, contentType: c.contentType, body: c.first})
		assert.True(t, same.replayed(), "%s: the same bytes are the same request", name)
	}
}

// TestFingerprintRuleIsVersioned: records made under one rule never match
// a request fingerprinted under another, even one with the same bytes.
func TestFingerprintRuleIsVersioned(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Options{})
	body := `{"amount":100,"currency":"eur","customer":"c1"}`
	rules := []server.FingerprintRule{
		{},
		paymentRule,
		{Select: []string{"/amount", "/currency"}},                               // no Check
		{Select: []string{"/currency", "/amount"}, Check: []string{"/customer"}}, // paymentRule, listed otherwise
	}
	var fps []string
	for _, rule := range rules {
		h := newHarness(t, server.Options{Fingerprint: rule, SingleTenant: true}, store)
		key := newKey()
		require.Equal(t, http.StatusCreated, h.do(call{key: key, contentType: jsonType, body: body}).status)
		c, err := store.Claim(context.Background(), server.Key{Key: key}, "probe", time.Second)
		require.NoError(t, err)
		fps = append(fps, c.Record.Fingerprint)
	}
	assert.Len(t, fps[0], 64, "the default is unchanged")
	for _, fp := range fps[1:] {
		assert.True(t, strings.HasPrefix(fp, "v2:sel:"), fp)
		assert.LessOrEqual(t, len(fp), 255, "fits every store's column")
	}
	assert.Equal(t, fps[1], fps[3], "the order of the pointers does not make another rule")
	assert.NotEqual(t, fps[1][:24], fps[2][:24], "each rule has its own name")

	// A key recorded under the default is refused under a rule, and the
	// other way round.
	key := newKey()
	plain := newHarness(t, server.Options{SingleTenant: true}, store)
	ruled := newHarness(t, server.Options{SingleTenant: true, Fingerprint: paymentRule}, store)
	require.Equal(t, http.StatusCreated, plain.do(call{key: key, contentType: jsonType, body: body}).status)
	requireProblem(t, ruled.do(call{key: key, contentType: jsonType, body: body}), http.StatusUnprocessableEntity, server.ProblemKeyReused)
}

// TestGoldenRuleFingerprints pins fingerprints taken under a rule: they
// are stored with records, so a retry after an upgrade must match.
func TestGoldenRuleFingerprints(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Options{})
	for _, g := range []struct {
		rule        server.FingerprintRule
		contentType string
		body        string
		want        string
	}{
		{paymentRule, jsonType, `{"amount":100,"currency":"eur","customer":"c1","ts":1}`,
			"v2:sel:7a739a2c3a9da5cd:f7abeccbaf302c001976b2428f3b6d50167c3b3fa6369cfc093d3d5869f3d6d3:7c3a7cdeef6d77098f207edccd664cc5dc4ee5520bb284343bd1ccc41116aad9"},
		{server.FingerprintRule{Select: []string{"/a/0"}}, jsonType, `{"a":[{"y":1,"x":2}]}`,
			"v2:sel:bee1bc0ae0721904:0b6bc347b756669656a4be9e7cddb78ca6dd7de82fcc4316a2035839f2f248f2"},
		{paymentRule, "text/plain", "raw",
			"v2:sel:7a739a2c3a9da5cd:facbdf3495fee3dc56f88eb0713592c254575e2691a48a6681df9bbe8f204772:fb7aa81a976bc8e0ecad1d4e7a8801448d8d9ed05a839848609923fdcbaf90d3"},
	} {
		h := newHarness(t, server.Options{Fingerprint: g.rule, SingleTenant: true}, store)
		key := newKey()
		require.Equal(t, http.StatusCreated, h.do(call{path: "/pay?x=1", key: key, contentType: g.contentType, body: g.body}).status)
		c, err := store.Claim(context.Background(), server.Key{Key: key}, "probe", time.Second)
		require.NoError(t, err)
		assert.Equal(t, g.want, c.Record.Fingerprint, "%+v", g)
	}
}

// formRule keys a form body by its amount field.
var formRule = server.FingerprintRule{
	Func: func(r *http.Request, body []byte) ([]byte, error) {
		v, err := url.ParseQuery(string(body))
		if err != nil || !v.Has("amount") {
			return nil, errors.New("no amount: secret detail")
		}
		return []byte(v.Get("amount")), nil
	},
	Version: "form-amount-1",
}

func TestFingerprintRuleFunc(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{Fingerprint: formRule}, nil)
	key := newKey()
	form := "application/x-www-form-urlencoded"
	require.Equal(t, http.StatusCreated, h.do(call{key: key, contentType: form, body: "amount=5&ts=1"}).status)
	assert.True(t, h.do(call{key: key, contentType: form, body: "ts=2&amount=5"}).replayed())
	requireProblem(t, h.do(call{key: key, contentType: form, body: "amount=6"}), http.StatusUnprocessableEntity, server.ProblemKeyReused)

	refused := h.do(call{key: newKey(), contentType: form, body: "ts=3"})
	requireProblem(t, refused, http.StatusBadRequest, server.ProblemBodyRefused)
	assert.EqualValues(t, 1, h.app.calls.Load(), "a refused body runs nothing")
	assert.Contains(t, h.logs.String(), "secret detail", "the error is logged, not sent")
}

// TestFingerprintRuleFuncWithCheck: checked fields a body cannot be
// selected from (a form body) count as the whole body, so a Func cannot
// let them change unseen.
func TestFingerprintRuleFuncWithCheck(t *testing.T) {
	t.Parallel()
	rule := formRule
	rule.Check = []string{"/customer"}
	h := newHarness(t, server.Options{Fingerprint: rule}, nil)
	key := newKey()
	form := "application/x-www-form-urlencoded"
	require.Equal(t, http.StatusCreated, h.do(call{key: key, contentType: form, body: "amount=5&customer=c1"}).status)
	assert.True(t, h.do(call{key: key, contentType: form, body: "amount=5&customer=c1"}).replayed())
	r := h.do(call{key: key, contentType: form, body: "amount=5&customer=c2"})
	requireProblem(t, r, http.StatusUnprocessableEntity, server.ProblemKeyReused)
	assert.Contains(t, r.body, "must not change")
	assert.EqualValues(t, 1, h.app.calls.Load())
}

func TestFingerprintRuleOptions(t *testing.T) {
	t.Parallel()
	fn := formRule.Func
	for name, rule := range map[string]server.FingerprintRule{
		"Check alone":           {Check: []string{"/a"}},
		"a pointer without '/'": {Select: []string{"amount"}},
		"a bad escape":          {Select: []string{"/a~2"}},
		"the end of an array":   {Select: []string{"/items/-"}},
		"Func without Version":  {Func: fn},
		"Version without Func":  {Select: []string{"/a"}, Version: "v1"},
		"Select and Func":       {Select: []string{"/a"}, Func: fn, Version: "v1"},
	} {
		assert.Panics(t, func() {
			server.Middleware(newMemstore(), server.Options{SingleTenant: true, Fingerprint: rule})
		}, name)
	}
}
