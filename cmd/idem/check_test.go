package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
