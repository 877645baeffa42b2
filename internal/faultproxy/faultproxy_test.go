package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		cfg          Config
		replay       bool // the upstream answers with Idempotent-Replayed: true
		wantErr      bool
		wantStatus   int
		wantUpstream int64
		want         func(Stats) int64
	}{
		{name: "pass", wantStatus: 201, wantUpstream: 1, want: func(s Stats) int64 { return s.Forwarded }},
		{name: "pass a replay", replay: true, wantStatus: 201, wantUpstream: 1, want: func(s Stats) int64 { return s.Forwarded }},
		{name: "reset", cfg: Config{Reset: 1}, wantErr: true, wantUpstream: 0, want: func(s Stats) int64 { return s.Resets }},
		{name: "unavailable", cfg: Config{Unavailable: 1}, wantStatus: 503, wantUpstream: 0, want: func(s Stats) int64 { return s.Unavailable }},
		{name: "drop after the work", cfg: Config{Drop: 1}, wantErr: true, wantUpstream: 1, want: func(s Stats) int64 { return s.Dropped }},
		{name: "drop a replay", cfg: Config{Drop: 1}, replay: true, wantErr: true, wantUpstream: 1, want: func(s Stats) int64 { return s.Dropped }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var upstream atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				upstream.Add(1)
				body, _ := io.ReadAll(r.Body)
				assert.Equal(t, `{"a":1}`, string(body))
				assert.Equal(t, "q=1", r.URL.RawQuery)
				if tc.replay {
					w.Header().Set("Idempotent-Replayed", "true")
				}
				w.WriteHeader(201)
			}))
			defer srv.Close()
			cfg := tc.cfg
			cfg.Upstream = srv.URL
			p, err := Start(cfg)
			require.NoError(t, err)
			defer p.Close()
			req, _ := http.NewRequest(http.MethodPost, p.URL()+"/charges?q=1", strings.NewReader(`{"a":1}`))
			req.Header.Set("X-Client-Id", "c1")
			resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, tc.wantStatus, resp.StatusCode)
			}
			assert.Equal(t, tc.wantUpstream, upstream.Load())
			st := p.Stats()
			assert.Equal(t, int64(1), st.Requests)
			assert.Equal(t, int64(1), tc.want(st))
			assert.Equal(t, int64(1), p.By("c1"))
			var delivered, dropped int64
			switch {
			case tc.replay && tc.wantStatus == 201:
				delivered = 1
			case tc.replay:
				dropped = 1
			}
			assert.Equal(t, delivered, st.Replayed, "replays count when the client gets them")
			assert.Equal(t, dropped, st.DroppedReplayed, "and when the proxy drops them")
		})
	}
}

func TestUpstreamMustBeLoopback(t *testing.T) {
	t.Parallel()
	for _, up := range []string{"http://192.0.2.1:80", "http://example.com"} {
		_, err := Start(Config{Upstream: up})
		require.Error(t, err, up)
	}
	for _, up := range []string{"http://127.0.0.1:1", "http://[::1]:1", "http://localhost:1"} {
		p, err := Start(Config{Upstream: up})
		require.NoError(t, err, up)
		p.Close()
	}
}
