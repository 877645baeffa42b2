package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/mysqlstore"
)

// BenchmarkMiddleware measures one payment request at a time over
// loopback HTTP, on the machine's MariaDB, through the middleware on
// mysqlstore and beside its floors, so that the ratios come from one run:
//
//   - floor/handler: the bare handler, no middleware, doing the business
//     INSERT in a transaction of its own (START TRANSACTION, INSERT,
//     COMMIT): what the request costs without idem.
//   - floor/statements: no HTTP; the statements a transactional new key
//     sends, by hand on one connection (the lookup with GET_LOCK, the
//     lookup again, START TRANSACTION, the business INSERT, the record's
//     INSERT, COMMIT, RELEASE_LOCK): what idem's protocol costs the
//     database.
//   - transactional/new-key, transactional/replay: the middleware on a
//     transactional Store, the handler's INSERT in the work's transaction.
//   - lease/new-key, lease/replay: the middleware on a Store in lease mode,
//     the handler's INSERT in autocommit.
//
// Run it alone: go test -run '^$' -bench BenchmarkMiddleware -benchtime 2000x
func BenchmarkMiddleware(b *testing.B) {
	db := newDB(b, 8)
	charges := newCharges(b, db)
	insert := "INSERT INTO " + charges + " (idem_key, amount) VALUES (?, 1000)"
	handlerTx := func(w http.ResponseWriter, r *http.Request) {
		tx, ok := mysqlstore.Tx(r.Context())
		if !ok {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		if _, err := tx.ExecContext(r.Context(), insert, r.Header.Get("Idempotency-Key")); err != nil {
			http.Error(w, "charge failed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}

	b.Run("floor/handler", func(b *testing.B) {
		svc := benchService(b, db)
		svc.serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tx, err := db.BeginTx(r.Context(), nil)
			if err == nil {
				if _, err = tx.ExecContext(r.Context(), insert, r.Header.Get("Idempotency-Key")); err == nil {
					err = tx.Commit()
				} else {
					_ = tx.Rollback()
				}
			}
			if err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		benchRequests(b, svc, true)
	})

	b.Run("floor/statements", func(b *testing.B) {
		table := tableName()
		newStore(b, db, mysqlstore.Options{Table: table, Transactional: true})
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		require.NoError(b, err)
		defer conn.Close()
		run := rand.Text()
		b.ResetTimer()
		for i := range b.N {
			key := fmt.Sprintf("%s-%d", run, i)
			id := fmt.Sprintf("UNHEX(SHA2('%s', 256))", key)
			lock := fmt.Sprintf("CONCAT('idem:', LEFT(SHA2('%s', 256), 58))", key)
			var got sql.NullInt64
			for _, q := range []string{
				"SELECT t.id IS NOT NULL, IF(t.id IS NULL, GET_LOCK(" + lock + ", 0), -1) FROM (SELECT 1) AS one LEFT JOIN " + table + " AS t ON t.id = " + id,
				"SELECT t.id IS NOT NULL, 1 FROM (SELECT 1) AS one LEFT JOIN " + table + " AS t ON t.id = " + id,
			} {
				var found bool
				require.NoError(b, conn.QueryRowContext(ctx, q).Scan(&found, &got))
			}
			for _, q := range []string{
				"START TRANSACTION",
				"INSERT INTO " + charges + " (idem_key, amount) VALUES ('" + key + "', 1000)",
				"INSERT INTO " + table + " (id, scope, idem_key, fingerprint, token, state, status, header, body, claimed_at, expires_at) VALUES (" +
					id + ", X'', X'" + fmt.Sprintf("%x", key) + "', X'" + strings.Repeat("ab", 32) + "', X'" + strings.Repeat("cd", 13) +
					"', 'completed', 201, NULL, X'', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 86400000000 MICROSECOND)",
				"COMMIT",
				"DO RELEASE_LOCK(" + lock + ")",
			} {
				_, err := conn.ExecContext(ctx, q)
				require.NoError(b, err)
			}
		}
	})

	for _, transactional := range []bool{true, false} {
		mode := map[bool]string{true: "transactional", false: "lease"}[transactional]
		handler := handlerTx
		if !transactional {
			handler = func(w http.ResponseWriter, r *http.Request) {
				if _, err := db.ExecContext(r.Context(), insert, r.Header.Get("Idempotency-Key")); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
			}
		}
		for _, replay := range []bool{false, true} {
			name := mode + map[bool]string{false: "/new-key", true: "/replay"}[replay]
			b.Run(name, func(b *testing.B) {
				svc := benchService(b, db)
				svc.store = newStore(b, db, mysqlstore.Options{Transactional: transactional})
				svc.serveIdem(b, nil, handler)
				benchRequests(b, svc, !replay)
			})
		}
	}
}

// benchService is a service on db whose client keeps one connection.
func benchService(b *testing.B, db *sql.DB) *service {
	svc := &service{db: db, client: &http.Client{}}
	b.Cleanup(svc.client.CloseIdleConnections)
	return svc
}

// benchRequests sends b.N payment requests, each with a fresh key when
// fresh, else all with one key answered once before the timer starts.
func benchRequests(b *testing.B, svc *service, fresh bool) {
	run := rand.Text()
	if !fresh {
		rep, err := svc.do(run)
		require.NoError(b, err)
		require.Equal(b, http.StatusCreated, rep.status)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key := run
		if fresh {
			key = fmt.Sprintf("%s-%d", run, i)
		}
		rep, err := svc.do(key)
		if err != nil || rep.status != http.StatusCreated {
			b.Fatalf("request %d: %v %d %s", i, err, rep.status, rep.body)
		}
	}
}
