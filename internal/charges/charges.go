// Package charges is the example charges service that idem's examples,
// chaos harness and benchmarks run: POST /charges takes a payment behind
// the idem middleware, GET /charges lists a client's charges. With
// PostgreSQL, each charge is a row written in the same transaction as the
// stored response. Otherwise the charges are kept in memory and the
// idempotency records in memstore or in the store Config.Store names
// (redisstore, say): a first execution's charge is kept once the store
// has recorded its outcome under the lease's fence, so a handler that
// panicked or a worker whose lease was taken over charges nothing.
package charges

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
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
	// Store, if set, keeps the idempotency records (a redisstore.Store,
	// say) while the charges stay in memory, each kept once Store.Complete
	// has recorded its request's outcome under the lease's fence. The
	// store's own units of work (Transactor, WorkClaimer) are not used.
	// Pool and Store are exclusive. Default nil: memstore.
	Store server.Store
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
	// Observer is the middleware's (see server.Options.Observer). Default
	// nil: none.
	Observer *server.Observer
	// PipelineClaim, with Pool, sends each key's claim with the charge's
	// INSERT (pgstore.Options.PipelineClaim): the handler makes no effect
	// before it. Not with Delay, which stands for a call to the card
	// network before the charge is written. Default false.
	PipelineClaim bool
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

// New builds the service, creating its tables in PostgreSQL if needed. It
// fails if both Pool and Store are set.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Table == "" {
		cfg.Table = "idem_example_charges"
	}
	s := &Service{cfg: cfg}
	var store server.Store
	switch {
	case cfg.Pool != nil && cfg.Store != nil:
		return nil, errors.New("charges: Config.Pool and Config.Store are exclusive")
	case cfg.PipelineClaim && (cfg.Pool == nil || cfg.Delay > 0):
		return nil, errors.New("charges: Config.PipelineClaim needs Pool, and no Delay: a call to the card network before the charge's INSERT would be made by every repeat")
	case cfg.Pool == nil:
		records := cfg.Store
		if records == nil {
			records = memstore.New(memstore.Options{})
		}
		ml := &memLedger{}
		s.ledger, store = ml, &memTx{Store: records, ledger: ml}
	default:
		pl := &pgLedger{pool: cfg.Pool, table: cfg.Table}
		if err := pl.migrate(ctx); err != nil {
			return nil, err
		}
		ps, err := pgstore.New(cfg.Pool, pgstore.Options{Table: cfg.Table + "_keys", Transactional: true, PipelineClaim: cfg.PipelineClaim})
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
		Observer: cfg.Observer,
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
