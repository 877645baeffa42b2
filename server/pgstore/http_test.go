package pgstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// payBody is the body of every payment request in these tests: repeats are
// byte-identical, so they share a fingerprint.
const payBody = `{"amount":1000,"currency":"eur"}`

// service is a payment API behind the middleware with a transactional
// pgstore: each charge is a row written through pgstore.Tx.
type service struct {
	pool    *pgxpool.Pool
	store   *pgstore.Store
	table   string // the store's table
	charges string // the charges table
	url     string
	client  *http.Client
}

// newService creates the store (transactional, on a pool of 20
// connections) and the charges table; serve then puts an API in front.
func newService(t *testing.T) *service {
	t.Helper()
	svc := &service{pool: newPool(t, poolConfig(t, 20)), table: tableName()}
	svc.store = newStore(t, svc.pool, pgstore.Options{Table: svc.table, Transactional: true})
	svc.charges = newCharges(t, svc.pool)
	svc.client = &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: raceRequests},
		Timeout:   30 * time.Second,
	}
	t.Cleanup(svc.client.CloseIdleConnections)
	return svc
}

// serve serves h over loopback HTTP and points post at it.
func (svc *service) serve(t *testing.T, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	svc.url = srv.URL + "/payments"
}

// serveIdem serves handler behind the middleware over store (the service's
// own if nil), single-tenant.
func (svc *service) serveIdem(t *testing.T, store server.Store, opts server.Options, handler http.HandlerFunc) {
	t.Helper()
	if store == nil {
		store = svc.store
	}
	opts.SingleTenant = true
	svc.serve(t, server.Middleware(store, opts)(handler))
}

// reply is what a client saw.
type reply struct {
	status   int
	replayed bool
	body     string
}

// post sends the payment request with key.
func (svc *service) post(t *testing.T, key string) reply {
	t.Helper()
	rep, err := svc.do(key)
	require.NoError(t, err)
	return rep
}

// do sends the payment request with key; safe from any goroutine.
func (svc *service) do(key string) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, svc.url, strings.NewReader(payBody))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := svc.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, replayed: resp.Header.Get(server.ReplayedHeader) == "true", body: string(body)}, nil
}

// charged returns the number of charges made under key.
func (svc *service) charged(t *testing.T, key string) int {
	t.Helper()
	var n int
	require.NoError(t, svc.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM "+svc.charges+" WHERE key = $1", key).Scan(&n))
	return n
}

// stored reports whether the store has a record for key, and whether it
// is completed.
func (svc *service) stored(t *testing.T, key string) (exists, completed bool) {
	t.Helper()
	err := svc.pool.QueryRow(context.Background(),
		"SELECT true, state = 'completed' FROM "+svc.table+" WHERE scope = '' AND key = $1", key).Scan(&exists, &completed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false
	}
	require.NoError(t, err)
	return exists, completed
}

// waitLeaseLapsed returns once the running record of key has passed its
// lease expiry by the database's clock. It gives up after ten seconds.
func (svc *service) waitLeaseLapsed(t *testing.T, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var lapsed bool
		require.NoError(t, svc.pool.QueryRow(context.Background(),
			"SELECT expires_at < statement_timestamp() FROM "+svc.table+" WHERE scope = '' AND key = $1", key).Scan(&lapsed))
		return lapsed
	}, 10*time.Second, 10*time.Millisecond)
}

// chargeTx writes a charge of amount under key through the request's
// transaction.
func (svc *service) chargeTx(r *http.Request, amount int) error {
	tx, ok := pgstore.Tx(r.Context())
	if !ok {
		return errNoTx
	}
	_, err := tx.Exec(r.Context(), "INSERT INTO "+svc.charges+" (key, amount) VALUES ($1, $2)",
		r.Header.Get("Idempotency-Key"), amount)
	return err
}

var errNoTx = errors.New("pgstore.Tx found no transaction in the request context")
