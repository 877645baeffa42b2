package main

// This file holds the child processes: the client, service A and
// provider B. Each reads its configuration from the environment and, for
// the two services, its listening socket from file descriptor 3.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/history"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

const (
	roleEnv   = "TWOHOP_ROLE"   // client, a or b
	configEnv = "TWOHOP_CONFIG" // childConfig, as JSON

	scopeHeader   = "X-Client-Id"      // stands in for authentication on both services
	processHeader = "X-Twohop-Process" // which client process sent a request, for the harness's proxy

	// The lines service A prints for the harness.
	lineReady     = "twohop-a: ready"
	lineAnswered  = "twohop-a: answered op="
	lineCommitted = "twohop-a: committed op="
	lineResumed   = "twohop-a: resumed "
	lineBReady    = "twohop-b: ready"
)

// childConfig is what the harness tells a child process.
type childConfig struct {
	RunID    string
	Database string
	AppName  string // application_name of the child's database sessions
	Tables   tables
	Ops      int
	Conc     int
	URL      string // client: the proxy in front of A; A: the proxy in front of B
	Journal  string
	Pause    time.Duration
	Naive    bool
	Process  int           // the client: which of the run's client processes this is
	Parent   int           // the harness's pid: a child whose parent changes exits
	Lifetime time.Duration // a child never outlives this
	History  string        // the client: the history file it appends its final answers to
}

// tables are a run's tables, all its own.
type tables struct {
	AKeys, Orders, BKeys, Charges string
}

func newTables(runID string) tables {
	p := "twohop_" + runID
	return tables{AKeys: p + "_a_keys", Orders: p + "_orders", BKeys: p + "_b_keys", Charges: p + "_charges"}
}

func (t tables) all() []string { return []string{t.AKeys, t.Orders, t.BKeys, t.Charges} }

// scopes: the client's at A, and A's at B.
func clientScope(runID string) string { return "twohop-" + runID }
func aScope(runID string) string      { return "twohop-a-" + runID }

// opKey is operation i's key at A: from business IDs, the same in every
// client process.
func opKey(runID string, i int) string { return idem.DeriveKey("twohop", runID, strconv.Itoa(i)) }

// orderBody is what the client sends A for operation i.
func orderBody(i int) []byte { return fmt.Appendf(nil, `{"op":%d,"amount":%d}`, i, amount(i)) }

// chargeBody is what A sends B for operation i: computed from the
// operation alone, so every run of A's handler sends the same bytes.
func chargeBody(runID string, i int) []byte {
	return fmt.Appendf(nil, `{"op":%d,"amount":%d,"currency":"usd","order":"%s-%d"}`, i, amount(i), runID, i)
}

func amount(i int) int { return 1000 + i }

// runChild runs the role the environment names and returns the exit code.
func runChild(role string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(configEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "twohop %s: bad %s: %v\n", role, configEnv, err)
		return 2
	}
	go watchParent(cfg)
	var err error
	switch role {
	case "client":
		err = runClient(cfg)
	case "a":
		err = runServiceA(cfg)
	case "b":
		err = runProviderB(cfg)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "twohop %s: %v\n", role, err)
		return 1
	}
	return 0
}

// watchParent ends the process when the harness is gone (the child was
// reparented) or the child's lifetime is over, so that no child outlives a
// harness that died without killing it.
func watchParent(cfg childConfig) {
	end := time.Now().Add(cfg.Lifetime)
	for {
		time.Sleep(100 * time.Millisecond)
		if os.Getppid() != cfg.Parent {
			os.Exit(3)
		}
		if cfg.Lifetime > 0 && time.Now().After(end) {
			fmt.Fprintln(os.Stderr, "twohop: child lifetime over")
			os.Exit(3)
		}
	}
}

// openJournal opens the journal, waiting for a killed predecessor's lock
// to go (it goes with the process; be patient anyway).
func openJournal(path string) (*idem.Journal, error) {
	var j *idem.Journal
	var err error
	for range 100 {
		if j, err = idem.OpenJournal(path, idem.JournalOptions{LockTimeout: 100 * time.Millisecond}); err == nil {
			return j, nil
		}
		if !errors.Is(err, idem.ErrJournalLocked) {
			return nil, err
		}
	}
	return nil, err
}

// retryable reports errors after which an operation is still pending and
// worth sending again.
func retryable(err error) bool {
	return errors.Is(err, idem.ErrRetriesExhausted) || errors.Is(err, idem.ErrBudgetExhausted)
}

// newPool opens a pool whose sessions carry cfg.AppName, so that the
// harness can tell when a killed process's sessions are gone.
func newPool(ctx context.Context, cfg childConfig, maxConns int32) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.Database)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = maxConns
	pc.ConnConfig.RuntimeParams["application_name"] = cfg.AppName
	return pgxpool.NewWithConfig(ctx, pc)
}

// listener is the socket the harness passed as file descriptor 3.
func listener() (net.Listener, error) {
	f := os.NewFile(3, "listener")
	if f == nil {
		return nil, errors.New("no listener on file descriptor 3")
	}
	defer f.Close()
	return net.FileListener(f)
}

// scopeOf reads the scope header, as authentication would.
func scopeOf(r *http.Request) (string, error) {
	if s := r.Header.Get(scopeHeader); s != "" {
		return s, nil
	}
	return "", errors.New("no " + scopeHeader)
}

// ---- the client ----

func runClient(cfg childConfig) error {
	j, err := openJournal(cfg.Journal)
	if err != nil {
		return err
	}
	defer j.Close()
	rec, err := history.Create(cfg.History, cfg.Process)
	if err != nil {
		return err
	}
	defer rec.Close()
	scope := clientScope(cfg.RunID)
	c, err := idem.New(idem.Options{
		Journal:           j,
		MaxAttempts:       20,
		BaseDelay:         5 * time.Millisecond,
		MaxDelay:          200 * time.Millisecond,
		MaxRetryAfter:     500 * time.Millisecond,
		AttemptTimeout:    15 * time.Second,
		ResumeJitter:      50 * time.Millisecond,
		ResumeConcurrency: cfg.Conc,
		PrepareRequest: func(r *http.Request) error {
			r.Header.Set(scopeHeader, scope)
			r.Header.Set(processHeader, strconv.Itoa(cfg.Process))
			return nil
		},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Lifetime)
	defer cancel()
	res, err := c.Resume(ctx)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil && !retryable(r.Err) {
			return fmt.Errorf("resuming %s: %w", r.Operation.Key, r.Err)
		}
	}
	if len(res) > 0 {
		fmt.Printf("twohop: the new client resumed %d pending operations\n", len(res))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Conc)
	for range cfg.Conc {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < cfg.Ops; i = int(next.Add(1)) - 1 {
				if err := order(ctx, c, rec, cfg, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// order sends operation i to A until it has a final answer.
func order(ctx context.Context, c *idem.Client, rec *history.Recorder, cfg childConfig, i int) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL+"/orders", bytes.NewReader(orderBody(i)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", opKey(cfg.RunID, i))
		call := history.Now()
		resp, err := c.Do(req)
		switch {
		case err == nil && resp.StatusCode == http.StatusCreated:
			recordAnswer(rec, i, resp, call)
			return nil
		case err == nil:
			return fmt.Errorf("operation %d: status %d: %s", i, resp.StatusCode, resp.Body)
		case ctx.Err() != nil:
			return fmt.Errorf("operation %d: %w", i, ctx.Err())
		case retryable(err):
			time.Sleep(50 * time.Millisecond) // still pending; keep at it
		default:
			return fmt.Errorf("operation %d: %w", i, err)
		}
	}
}

// ---- service A ----

type serviceA struct {
	cfg childConfig
	toB *idem.Client
}

// mark is how A's handler tells the wrapper around the middleware which
// operation it ran, so that the wrapper can say when it was committed.
type mark struct {
	op       atomic.Int64
	answered atomic.Bool
}

type markKey struct{}

func runServiceA(cfg childConfig) error {
	ctx := context.Background()
	pool, err := newPool(ctx, cfg, 48)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{Table: cfg.Tables.AKeys, Transactional: true})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	j, err := openJournal(cfg.Journal)
	if err != nil {
		return err
	}
	defer j.Close()
	scope := aScope(cfg.RunID)
	toB, err := idem.New(idem.Options{
		Journal: j,
		// The same secret in every process of A: a re-run in the next
		// process derives the same key.
		DeriveSecret:   []byte("twohop/" + cfg.RunID),
		MaxAttempts:    20,
		BaseDelay:      5 * time.Millisecond,
		MaxDelay:       200 * time.Millisecond,
		MaxRetryAfter:  500 * time.Millisecond,
		AttemptTimeout: 10 * time.Second,
		ResumeJitter:   20 * time.Millisecond,
		PrepareRequest: func(r *http.Request) error {
			r.Header.Set(scopeHeader, scope)
			return nil
		},
	})
	if err != nil {
		return err
	}
	// The calls to B that a killed A left pending: finish them before
	// serving. A re-run of their handler then finds them in the journal.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	res, err := toB.Resume(rctx)
	cancel()
	if err != nil {
		return err
	}
	pending := 0
	for _, r := range res {
		if r.Err != nil {
			pending++
		}
	}
	fmt.Printf("%s%d pending calls to B (%d still pending)\n", lineResumed, len(res), pending)

	ln, err := listener()
	if err != nil {
		return err
	}
	a := &serviceA{cfg: cfg, toB: toB}
	protect := server.Middleware(store, server.Options{Scope: scopeOf})
	mux := http.NewServeMux()
	mux.Handle("POST /orders", a.wrap(protect(http.HandlerFunc(a.order))))
	fmt.Println(lineReady)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// wrap says, once the middleware has committed the order and sent its
// answer, that operation's order is committed.
func (a *serviceA) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := &mark{}
		m.op.Store(-1)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), markKey{}, m)))
		if m.answered.Load() && sw.status == http.StatusCreated && w.Header().Get("Idempotent-Replayed") != "true" {
			fmt.Printf("%s%d\n", lineCommitted, m.op.Load())
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// order is A's handler: an order row in the request's transaction, a
// charge at B, then the answer, which the middleware commits with the
// order.
func (a *serviceA) order(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var in struct{ Op, Amount int }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Op < 0 || in.Amount != amount(in.Op) {
		http.Error(w, "want {op, amount}", http.StatusBadRequest)
		return
	}
	tx, ok := pgstore.Tx(ctx)
	held, _ := server.KeyFrom(ctx)
	if !ok {
		http.Error(w, "no transaction", http.StatusInternalServerError)
		return
	}
	var id int64
	if err := tx.QueryRow(ctx, fmt.Sprintf("INSERT INTO %s (op, key) VALUES ($1, $2) RETURNING id", a.cfg.Tables.Orders),
		in.Op, held.Key).Scan(&id); err != nil {
		http.Error(w, "try again", http.StatusServiceUnavailable) // released: the retry runs again
		return
	}

	req, _ := http.NewRequestWithContext(idem.Step(ctx, "charge"), http.MethodPost, a.cfg.URL+"/charges",
		bytes.NewReader(chargeBody(a.cfg.RunID, in.Op)))
	req.Header.Set("Content-Type", "application/json")
	if a.cfg.Naive {
		req.Header.Set("Idempotency-Key", idem.NewKey()) // the mistake: a new key on every run
	}
	resp, err := a.toB.Do(req)
	if err != nil {
		http.Error(w, "provider unavailable", http.StatusServiceUnavailable)
		return
	}
	var charge struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(resp.Body, &charge) != nil || charge.ID == "" {
		http.Error(w, fmt.Sprintf("provider answered %d", resp.StatusCode), http.StatusBadGateway)
		return
	}
	if m, ok := ctx.Value(markKey{}).(*mark); ok {
		m.op.Store(int64(in.Op))
		m.answered.Store(true)
	}
	fmt.Printf("%s%d journal=%t\n", lineAnswered, in.Op, resp.FromJournal)
	if _, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET charge_id = $1 WHERE id = $2", a.cfg.Tables.Orders), charge.ID, id); err != nil {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	time.Sleep(a.cfg.Pause) // the window: B has charged, A has not committed
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"op":%d,"charge":%q}`, in.Op, charge.ID)
}

// ---- provider B ----

func runProviderB(cfg childConfig) error {
	ctx := context.Background()
	pool, err := newPool(ctx, cfg, 48)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{Table: cfg.Tables.BKeys, Transactional: true})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	ln, err := listener()
	if err != nil {
		return err
	}
	insert := fmt.Sprintf("INSERT INTO %s (id, op, key, amount) VALUES ($1, $2, $3, $4)", cfg.Tables.Charges)
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Op, Amount int
			Order      string
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Op < 0 || in.Amount <= 0 {
			http.Error(w, "want {op, amount, order}", http.StatusBadRequest)
			return
		}
		held, _ := server.KeyFrom(r.Context())
		tx, _ := pgstore.Tx(r.Context())
		id := "ch_" + rand.Text()[:16]
		if _, err := tx.Exec(r.Context(), insert, id, in.Op, held.Key, in.Amount); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q,"op":%d,"amount":%d}`, id, in.Op, in.Amount)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", server.Middleware(store, server.Options{Scope: scopeOf, Wait: time.Second})(charge))
	fmt.Println(lineBReady)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
