package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
)

// payBody is the body of every payment request in these tests: repeats are
// byte-identical, so they share a fingerprint.
const payBody = `{"amount":1000,"currency":"eur"}`

// service is a payment API behind the middleware with a transactional
// mysqlstore: each charge is a row written through mysqlstore.Tx.
type service struct {
	db      *sql.DB
	store   *mysqlstore.Store
	charges string // the charges table
	url     string
	client  *http.Client
}

// newService creates the store (transactional, on a pool of 20
// connections) and the charges table; serve then puts an API in front.
func newService(t *testing.T) *service {
	t.Helper()
	svc := &service{db: newDB(t, 20)}
	svc.store = newStore(t, svc.db, mysqlstore.Options{Transactional: true})
	svc.charges = newCharges(t, svc.db)
	svc.client = &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: raceRequests},
		Timeout:   30 * time.Second,
	}
	t.Cleanup(svc.client.CloseIdleConnections)
	return svc
}

// newCharges creates a charges table, dropped when the test ends: one row
// per charge, the key not unique, so that a double charge shows.
func newCharges(t testing.TB, db *sql.DB) string {
	t.Helper()
	name := "charges_" + tableName()
	_, err := db.Exec("CREATE TABLE " + name + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, idem_key VARCHAR(255) NOT NULL, amount INT NOT NULL, KEY (idem_key)) ENGINE = InnoDB")
	require.NoError(t, err)
	dropTable(t, db, name)
	return name
}

// serve serves h over loopback HTTP and points do at it.
func (svc *service) serve(t testing.TB, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	svc.url = srv.URL + "/payments"
}

// serveIdem serves handler behind the middleware over store (the service's
// own if nil), single-tenant.
func (svc *service) serveIdem(t testing.TB, store server.Store, handler http.HandlerFunc) {
	t.Helper()
	if store == nil {
		store = svc.store
	}
	svc.serve(t, server.Middleware(store, server.Options{SingleTenant: true})(handler))
}

// reply is what a client saw.
type reply struct {
	status   int
	replayed bool
	body     string
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
	return countCharges(t, svc.db, svc.charges, key)
}

// countCharges returns the rows of charges under key, or all of them for
// an empty key.
func countCharges(t testing.TB, db *sql.DB, charges, key string) int {
	t.Helper()
	var n int
	q, args := "SELECT count(*) FROM "+charges+" WHERE idem_key = ?", []any{key}
	if key == "" {
		q, args = "SELECT count(*) FROM "+charges, nil
	}
	require.NoError(t, db.QueryRowContext(context.Background(), q, args...).Scan(&n))
	return n
}

// chargeTx writes a charge of amount under key through the request's
// transaction.
func (svc *service) chargeTx(r *http.Request, amount int) error {
	tx, ok := mysqlstore.Tx(r.Context())
	if !ok {
		return errNoTx
	}
	_, err := tx.ExecContext(r.Context(), "INSERT INTO "+svc.charges+" (idem_key, amount) VALUES (?, ?)",
		r.Header.Get("Idempotency-Key"), amount)
	return err
}

var errNoTx = errors.New("mysqlstore.Tx found no transaction in the request context")
