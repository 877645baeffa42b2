package charges

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// services returns the in-memory service and, when IDEM_TEST_DATABASE is
// set, the PostgreSQL one (required under CI=true). The service on Redis
// is tested in the redisstore module (charges_test.go there), which keeps
// go-redis out of this one.
func services(t *testing.T) map[string]*Service {
	ctx := context.Background()
	mem, err := New(ctx, Config{})
	require.NoError(t, err)
	out := map[string]*Service{"memory": mem}
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_DATABASE is not set; CI needs the PostgreSQL tests")
		}
		t.Log("IDEM_TEST_DATABASE not set: PostgreSQL variant skipped")
		return out
	}
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	table := fmt.Sprintf("charges_test_%d", rand.Uint32())
	pg, err := New(ctx, Config{Pool: pool, Table: table})
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table+", "+table+"_keys")
	})
	out["postgres"] = pg
	return out
}

type answer struct {
	status   int
	replayed bool
	body     map[string]any
}

func post(t *testing.T, url, client, key, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/charges", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if client != "" {
		req.Header.Set(ClientHeader, client)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func TestChargesService(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(svc.Handler())
			defer srv.Close()
			ctx := context.Background()

			first := post(t, srv.URL, "acme", "k1", `{"amount":1000,"currency":"usd","ref":"order-1"}`)
			require.Equal(t, 201, first.status)
			assert.False(t, first.replayed)
			assert.Equal(t, "order-1", first.body["ref"])
			again := post(t, srv.URL, "acme", "k1", `{"currency":"usd","amount":1000,"ref":"order-1"}`)
			assert.Equal(t, 201, again.status)
			assert.True(t, again.replayed)
			assert.Equal(t, first.body["id"], again.body["id"], "the same charge, not a second one")

			other := post(t, srv.URL, "globex", "k1", `{"amount":1000,"currency":"usd","ref":"order-1"}`)
			assert.Equal(t, 201, other.status, "another client's k1 is another operation")
			assert.NotEqual(t, first.body["id"], other.body["id"])

			assert.Equal(t, 422, post(t, srv.URL, "acme", "k1", `{"amount":2000}`).status)
			assert.Equal(t, 401, post(t, srv.URL, "", "k2", `{"amount":1}`).status)
			assert.Equal(t, 400, post(t, srv.URL, "acme", "", `{"amount":1}`).status)

			for _, tc := range []struct {
				key, body string
				status    int
			}{
				{"bad-amount", `{"amount":0}`, 400},
				{"declined", `{"amount":402}`, 402},
				{"not-json", `amount=5`, 400},
			} {
				a := post(t, srv.URL, "acme", tc.key, tc.body)
				assert.Equal(t, tc.status, a.status, tc.key)
				b := post(t, srv.URL, "acme", tc.key, tc.body)
				assert.Equal(t, tc.status, b.status, tc.key)
				assert.True(t, b.replayed, "%s: a business error is stored and replayed", tc.key)
			}

			// The handler writes a charge and panics: rolled back, key released.
			for range 2 {
				p := post(t, srv.URL, "acme", "boom", `{"amount":5,"ref":"panic"}`)
				assert.Equal(t, 500, p.status)
				assert.False(t, p.replayed, "a released key runs again")
			}

			cs, err := svc.Charges(ctx, "acme")
			require.NoError(t, err)
			require.Len(t, cs, 1, "one charge for acme: no duplicate, no panic leftovers")
			assert.Equal(t, first.body["id"], cs[0].ID)

			resp, err := http.Get(srv.URL + "/charges")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 401, resp.StatusCode)
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/charges", nil)
			req.Header.Set(ClientHeader, "acme")
			resp, err = http.DefaultClient.Do(req)
			require.NoError(t, err)
			var list struct {
				Count   int      `json:"count"`
				Charges []Charge `json:"charges"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
			resp.Body.Close()
			assert.Equal(t, 1, list.Count)
			assert.Equal(t, int64(1000), list.Charges[0].Amount)
		})
	}
}

// TestAnswersAreNotHTMLEscaped reads the service's own JSON as bytes: <, >
// and & must appear as they are, not as \u003c, \u003e and \u0026, in its
// errors, in a charge and in the list.
func TestAnswersAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	svc, err := New(context.Background(), Config{})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	send := func(method, key, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+"/charges", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(ClientHeader, "acme")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(raw)
	}
	for _, tc := range []struct {
		name, method, key, body string
		status                  int
		want                    string
	}{
		{"bad body", http.MethodPost, "k1", `{"amount":"ten"}`, 400, `<cents>`},
		{"charge", http.MethodPost, "k2", `{"amount":100,"ref":"a<b>&c"}`, 201, `"ref":"a<b>&c"`},
		{"replayed charge", http.MethodPost, "k2", `{"amount":100,"ref":"a<b>&c"}`, 201, `"ref":"a<b>&c"`},
		{"list", http.MethodGet, "", "", 200, `"ref":"a<b>&c"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := send(tc.method, tc.key, tc.body)
			assert.Equal(t, tc.status, status)
			assert.Contains(t, body, tc.want)
			assert.NotContains(t, body, `\u00`)
		})
	}
}
