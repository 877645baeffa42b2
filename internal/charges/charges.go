// Package charges is the example charges service that idem's examples,
// chaos harness and benchmarks run: POST /charges takes a payment behind
// the idem middleware, GET /charges lists a client's charges. With
// PostgreSQL, each charge is a row written in the same transaction as the
// stored response; with the in-memory store, a charge is kept when the
// handler returns without panicking.
package charges

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/pgstore"
)

// ClientHeader names the caller. It stands in for authentication and is
// the idempotency scope: keys from two clients never meet.
const ClientHeader = "X-Client-Id"

// Config configures a Service. The zero value is an in-memory service.
type Config struct {
	// Pool, if set, keeps charges and idempotency records in PostgreSQL,
	// transactionally. Default nil: in memory.
	Pool *pgxpool.Pool
	// Table is the charges table in PostgreSQL. Default "idem_example_charges".
	// The idempotency records go to Table+"_keys".
	Table string
	// Delay simulates the card network's latency inside the handler.
	Delay time.Duration
	// Optional lets POSTs without an Idempotency-Key run unprotected, as
	// on a service that predates idem. Default false: the key is required.
	Optional bool
	// Lease and Wait are passed to the middleware (see server.Options).
	Lease time.Duration
	Wait  time.Duration
	// Logger gets the middleware's log. Default nil: silent.
	Logger *slog.Logger
}

// Charge is one payment taken.
type Charge struct {
	ID       string `json:"id"`
	Client   string `json:"-"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Ref      string `json:"ref,omitempty"`
}

// Service is the charges service. Safe for concurrent use.
type Service struct {
	cfg     Config
	ledger  ledger
	handler http.Handler
}

// New builds the service, creating its tables in PostgreSQL if needed.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Table == "" {
		cfg.Table = "idem_example_charges"
	}
	s := &Service{cfg: cfg}
	var store server.Store
	if cfg.Pool == nil {
		ml := &memLedger{}
		s.ledger, store = ml, &memTx{Store: memstore.New(memstore.Options{}), ledger: ml}
	} else {
		pl := &pgLedger{pool: cfg.Pool, table: cfg.Table}
		if err := pl.migrate(ctx); err != nil {
			return nil, err
		}
		ps, err := pgstore.New(cfg.Pool, pgstore.Options{Table: cfg.Table + "_keys", Transactional: true})
		if err != nil {
			return nil, err
		}
		if err := ps.Migrate(ctx); err != nil {
			return nil, err
		}
		s.ledger, store = pl, ps
	}
	mw := server.Middleware(store, server.Options{
		Scope:    clientOf,
		Optional: cfg.Optional,
		Lease:    cfg.Lease,
		Wait:     cfg.Wait,
		Logger:   cfg.Logger,
	})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", mw(http.HandlerFunc(s.create)))
	mux.HandleFunc("GET /charges", s.list)
	s.handler = mux
	return s, nil
}

// Handler serves the API.
func (s *Service) Handler() http.Handler { return s.handler }

// Charges returns a client's charges, oldest first.
func (s *Service) Charges(ctx context.Context, client string) ([]Charge, error) {
	return s.ledger.list(ctx, client)
}

func clientOf(r *http.Request) (string, error) {
	if c := r.Header.Get(ClientHeader); c != "" {
		return c, nil
	}
	return "", errors.New("no " + ClientHeader)
}

type chargeRequest struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Ref      string `json:"ref"`
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) {
	client, err := clientOf(r)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing " + ClientHeader})
		return
	}
	var req chargeRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"amount\": <cents>, \"currency\": \"usd\", \"ref\": \"...\"}"})
		return
	}
	if req.Amount <= 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "amount must be a positive number of cents"})
		return
	}
	if req.Currency == "" {
		req.Currency = "usd"
	}
	if s.cfg.Delay > 0 { // the card network
		t := time.NewTimer(s.cfg.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "cancelled"})
			return
		}
	}
	if req.Amount == 402 {
		writeJSON(w, http.StatusPaymentRequired, map[string]string{"error": "card declined"})
		return
	}
	c := Charge{ID: newID(), Client: client, Amount: req.Amount, Currency: req.Currency, Ref: req.Ref}
	if err := s.ledger.add(r.Context(), c); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not record the charge"})
		return
	}
	if req.Ref == "panic" {
		panic("charges: the handler failed after writing its charge")
	}
	writeJSON(w, http.StatusCreated, c)
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) {
	client, err := clientOf(r)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing " + ClientHeader})
		return
	}
	cs, err := s.ledger.list(r.Context(), client)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not list charges"})
		return
	}
	if cs == nil {
		cs = []Charge{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(cs), "charges": cs})
}

// writeJSON is the one place the service writes JSON. Its answers are
// read by programs and people with curl, never embedded in HTML, so <, >
// and & are written as they are rather than as \u003c escapes.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return "ch_" + hex.EncodeToString(b[:])
}

// ledger keeps charges. add writes one in the request's unit of work: it
// counts once the work commits, together with the stored response, and
// not at all if the work rolls back (the handler failed, or its lease was
// taken over).
type ledger interface {
	add(ctx context.Context, c Charge) error
	list(ctx context.Context, client string) ([]Charge, error)
}

// memLedger is the in-memory ledger. Its unit of work is a memWork, which
// memTx begins for each first execution.
type memLedger struct {
	mu      sync.Mutex
	charges []Charge
}

func (l *memLedger) add(ctx context.Context, c Charge) error {
	if w, ok := ctx.Value(memWorkKey{}).(*memWork); ok {
		w.pending = append(w.pending, c)
		return nil
	}
	l.mu.Lock() // a request without a key, let through unprotected
	l.charges = append(l.charges, c)
	l.mu.Unlock()
	return nil
}

// memTx makes a memstore transactional for the in-memory ledger: a work's
// charges are appended under the ledger's lock together with the fenced
// Complete, so a worker whose lease was taken over adds nothing, as a
// rolled-back PostgreSQL transaction would.
type memTx struct {
	*memstore.Store
	ledger *memLedger
}

type memWorkKey struct{}

type memWork struct {
	tx      *memTx
	k       server.Key
	token   string
	pending []Charge // one goroutine, the handler's, appends
}

func (t *memTx) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	w := &memWork{tx: t, k: k, token: token}
	return context.WithValue(ctx, memWorkKey{}, w), w, nil
}

func (w *memWork) Commit(ctx context.Context, resp server.Response, retention time.Duration) error {
	l := w.tx.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := w.tx.Complete(ctx, w.k, w.token, resp, retention); err != nil {
		return err // the lease was lost: the charges go with the work
	}
	l.charges = append(l.charges, w.pending...)
	return nil
}

func (w *memWork) Rollback(context.Context) error {
	w.pending = nil
	return nil
}

func (l *memLedger) list(_ context.Context, client string) ([]Charge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Charge
	for _, c := range l.charges {
		if c.Client == client {
			out = append(out, c)
		}
	}
	return slices.Clip(out), nil
}

type pgLedger struct {
	pool  *pgxpool.Pool
	table string
}

func (l *pgLedger) migrate(ctx context.Context) error {
	_, err := l.pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		id text PRIMARY KEY,
		client_id text NOT NULL,
		amount bigint NOT NULL,
		currency text NOT NULL,
		ref text NOT NULL DEFAULT '',
		created_at timestamptz NOT NULL DEFAULT clock_timestamp()
	);
	CREATE INDEX IF NOT EXISTS %s_client ON %s (client_id, created_at)`, l.table, l.table, l.table))
	return err
}

func (l *pgLedger) add(ctx context.Context, c Charge) error {
	q := fmt.Sprintf(`INSERT INTO %s (id, client_id, amount, currency, ref) VALUES ($1, $2, $3, $4, $5)`, l.table)
	var err error
	if tx, ok := pgstore.Tx(ctx); ok {
		_, err = tx.Exec(ctx, q, c.ID, c.Client, c.Amount, c.Currency, c.Ref)
	} else { // a request without a key, let through unprotected
		_, err = l.pool.Exec(ctx, q, c.ID, c.Client, c.Amount, c.Currency, c.Ref)
	}
	return err
}

func (l *pgLedger) list(ctx context.Context, client string) ([]Charge, error) {
	rows, err := l.pool.Query(ctx, fmt.Sprintf(`SELECT id, client_id, amount, currency, ref FROM %s WHERE client_id = $1 ORDER BY created_at, id`, l.table), client)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Charge
	for rows.Next() {
		var c Charge
		if err := rows.Scan(&c.ID, &c.Client, &c.Amount, &c.Currency, &c.Ref); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
