package main

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
)

// TestCheckVerdicts runs idem check against the three servers: the
// charges service passes every probe, the naive server executes concurrent
// copies twice, and the server that ignores keys executes every request.
func TestCheckVerdicts(t *testing.T) {
	t.Parallel()
	srv := mustStartServers(t)
	tests := []struct {
		name     string
		url      string
		code     int
		verdict  string
		verdicts map[string]string // probe → verdict
		charges  func() int
		executed int // charges after the check
	}{{
		name: "charges service", url: srv.charges.URL + "/charges", code: exitOK, verdict: pass,
		verdicts: map[string]string{
			"3 copies at once, one key": pass, "same request again": pass, "replay marked": pass,
			`key quoted ("key")`: pass, "same key, different body": pass, "no key": pass,
		},
		charges: func() int {
			n, err := srv.chargeCount(testClient)
			require.NoError(t, err)
			return n
		},
		executed: 1,
	}, {
		name: "naive server", url: srv.naive.URL, code: exitUnsafe, verdict: fail,
		verdicts: map[string]string{
			"3 copies at once, one key": fail, "same request again": pass, "replay marked": pass,
			`key quoted ("key")`: pass, "same key, different body": pass, "no key": pass,
		},
		charges: srv.naiveSrv.count,
	}, {
		name: "server ignoring keys", url: srv.ignoring.URL, code: exitUnsafe, verdict: fail,
		verdicts: map[string]string{
			"3 copies at once, one key": fail, "same request again": fail, "replay marked": skip,
			`key quoted ("key")`: warn, "same key, different body": fail, "no key": warn,
		},
		charges:  srv.ignoringSv.count,
		executed: 3 + 4,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runIdem(t, "", nil, "check", "--json", "--yes", "--copies", "3",
				"-H", "X-Client-Id: "+testClient, "-d", `{"amount": 1000, "currency": "usd"}`, tt.url)
			require.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			var rep checkReport
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
			assert.Equal(t, tt.verdict, rep.Verdict)
			assert.Equal(t, 7, rep.Requests)
			got := map[string]string{}
			for _, p := range rep.Probes {
				got[p.Probe] = p.Verdict
			}
			assert.Equal(t, tt.verdicts, got, r.stdout)
			if tt.executed > 0 {
				assert.Equal(t, tt.executed, tt.charges())
			} else {
				assert.GreaterOrEqual(t, tt.charges(), 2, "the naive server ran concurrent copies more than once")
			}
		})
	}
}

// TestCheckProfiles runs idem check --profile against imitations of
// Square (the key in the JSON body) and Stripe (the key in a header): each
// gets the key where its API reads it, as long as its profile says the
// API takes, and each reads the API's own key-reuse error as key reuse.
// An API that takes shorter keys than its profile says is reported as not
// accepting the request, with the key's length.
func TestCheckProfiles(t *testing.T) {
	t.Parallel()
	const payment = `{"amount_money": {"amount": 100, "currency": "USD"}, "source_id": "cnon:card-nonce-ok"}`
	tests := []struct {
		name     string
		api      *fakeAPI
		args     []string
		code     int
		verdicts map[string]string // probe → verdict
		keyLen   int
		executed int
		stderr   string
	}{{
		name: "square", api: squareLike(45), args: []string{"--profile", "square", "-d", payment},
		code: exitOK, keyLen: 45, executed: 1,
		verdicts: map[string]string{
			"key of 45 characters": pass, "3 copies at once, one key": pass, "same request again": pass,
			"replay marked": warn, `key quoted ("key")`: skip, "same key, different body": pass, "no key": pass,
		},
	}, {
		name: "stripe", api: stripeLike(), args: []string{"--profile", "stripe", "-d", "amount=1000&currency=usd"},
		code: exitOK, keyLen: 255,
		executed: 2, // the copies once, and the request without a key; the quoted key is too long
		verdicts: map[string]string{
			"key of 255 characters": pass, "3 copies at once, one key": pass, "same request again": pass,
			"replay marked": pass, `key quoted ("key")`: warn, "same key, different body": pass, "no key": warn,
		},
	}, {
		name: "square taking shorter keys than its profile says", api: squareLike(40),
		args: []string{"--profile", "square", "-d", payment}, code: exitError,
		stderr: "with a key of 45 characters in the JSON body's idempotency_key, as the square profile says it takes",
	}, {
		name: "square without the profile", api: squareLike(45), args: []string{"-d", payment}, code: exitError,
		stderr: "MISSING_REQUIRED_PARAMETER",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.api)
			t.Cleanup(srv.Close)
			args := append([]string{"check", "--json", "--yes", "--copies", "3"}, tt.args...)
			r := runIdem(t, "", nil, append(args, srv.URL)...)
			require.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			if tt.stderr != "" {
				assert.Contains(t, r.stderr, tt.stderr)
				assert.Zero(t, tt.api.count(), "a refused request executed nothing")
				return
			}
			var rep checkReport
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
			require.NotNil(t, rep.Profile)
			assert.Equal(t, tt.args[1], rep.Profile.Name)
			assert.NotEmpty(t, rep.Profile.Sources)
			assert.Equal(t, tt.keyLen, rep.KeyLength)
			got := map[string]string{}
			for _, p := range rep.Probes {
				got[p.Probe] = p.Verdict
			}
			assert.Equal(t, tt.verdicts, got, r.stdout)
			assert.Equal(t, warn, rep.Verdict)
			assert.Equal(t, tt.executed, tt.api.count())
		})
	}
}

// TestProbeKey: a probe key has exactly the length asked for, in
// printable ASCII, and is fresh every time.
func TestProbeKey(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 20, 35, 36, 37, 45, 64, 108, 255} {
		a, b := probeKey(n), probeKey(n)
		assert.Len(t, a, n)
		assert.NoError(t, idem.ValidateKey(a))
		if n >= 8 {
			assert.NotEqual(t, a, b)
		}
	}
}
