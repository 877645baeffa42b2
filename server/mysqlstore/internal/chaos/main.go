// Command chaos proves mysqlstore's transactional mode across crashes of
// the database: it runs a charges API behind server.Middleware on a
// transactional mysqlstore, sends it N operations through an idem client
// that retries, and meanwhile SIGKILLs the MariaDB server K times and
// starts it again (crash recovery each time), through scripts/mariadb.sh,
// so that kills land in claims, in handlers' transactions and in commits.
// At the end it counts the charges each operation's key left, and prints
// as its last line
//
//	operations=<n> rows=<r> duplicates=<d> lost=<l> kills=<k>
//
// exiting non-zero unless every operation got its 201, left exactly one
// row and one completed record, and all K kills happened while operations
// were still running. Every wait is bounded: an operation that cannot
// finish within -timeout fails the run.
//
// It kills only the server scripts/mariadb.sh started on the DSN's port,
// and refuses port 3306:
//
//	export IDEM_CHAOS_MYSQL=$(scripts/mariadb.sh start | tail -n 1)
//	go run ./server/mysqlstore/internal/chaos -ops 600 -kills 3
//	scripts/mariadb.sh stop
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
)

type options struct {
	dsn, script string
	ops, kills  int
	conc        int
	naive       bool
	down        time.Duration
	timeout     time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.dsn, "dsn", cmp.Or(os.Getenv("IDEM_CHAOS_MYSQL"), "root@tcp(127.0.0.1:3307)/test"), "DSN of the MariaDB server of scripts/mariadb.sh")
	flag.StringVar(&o.script, "script", "", "path of scripts/mariadb.sh (default: found above the working directory)")
	flag.IntVar(&o.ops, "ops", 600, "operations")
	flag.IntVar(&o.kills, "kills", 3, "SIGKILLs of the server during the run")
	flag.IntVar(&o.conc, "conc", 8, "operations in flight at once")
	flag.BoolVar(&o.naive, "naive", false, "charge without the middleware (a naive handler that checks, then inserts), to show what the run catches")
	flag.DurationVar(&o.down, "down", 500*time.Millisecond, "how long the server stays dead after each kill")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.ops < 1 || o.kills < 0 || o.conc < 1 {
		return errors.New("-ops and -conc must be positive, -kills not negative")
	}
	cfg, err := mysql.ParseDSN(o.dsn)
	if err != nil {
		return fmt.Errorf("-dsn: %v", err)
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil || cfg.Net != "tcp" || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("-dsn %s: want a loopback tcp address of the server scripts/mariadb.sh started", cfg.Addr)
	}
	if port == "3306" {
		return errors.New("-dsn names port 3306, the machine's own server: the harness kills only a server of its own (scripts/mariadb.sh, port 3307)")
	}
	script, err := findScript(o.script)
	if err != nil {
		return err
	}
	ctl := func(cmd string) error {
		c := exec.Command(script, cmd)
		c.Env = append(os.Environ(), "IDEM_MARIADB_PORT="+port)
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v: %s", script, cmd, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := ctl("status"); err != nil {
		return fmt.Errorf("the server on port %s does not answer: start it with scripts/mariadb.sh start (%v)", port, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	// Short dial and read timeouts: a request to a dead server fails fast
	// and is retried, instead of hanging until the kernel gives up.
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 20*time.Second, 20*time.Second
	// The driver logs each connection the kills broke; the run counts what
	// matters.
	cfg.Logger = log.New(io.Discard, "", 0)
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(4 * o.conc)
	db.SetMaxIdleConns(4 * o.conc)

	runID := strings.ToLower(rand.Text()[:10])
	table, charges := "idem_chaos_"+runID, "charges_chaos_"+runID
	store, err := mysqlstore.New(db, mysqlstore.Options{Table: table, Transactional: true})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+charges+
		" (id BIGINT AUTO_INCREMENT PRIMARY KEY, idem_key VARCHAR(255) NOT NULL, amount INT NOT NULL, KEY (idem_key)) ENGINE = InnoDB"); err != nil {
		return err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_, _ = db.ExecContext(cctx, "DROP TABLE IF EXISTS "+table+", "+charges)
	}()

	url, stop, err := serve(store, db, charges, o.naive)
	if err != nil {
		return err
	}
	defer stop()

	client, err := idem.New(idem.Options{
		AttemptTimeout: 10 * time.Second,
		MaxAttempts:    100,
		BaseDelay:      20 * time.Millisecond,
		MaxDelay:       300 * time.Millisecond,
		MaxRetryAfter:  300 * time.Millisecond,
		Budget:         idem.BudgetOptions{Capacity: -1},
	})
	if err != nil {
		return err
	}

	var (
		done    atomic.Int64
		failed  atomic.Int64
		firstMu sync.Mutex
		first   error
		ops     = make(chan int)
		wg      sync.WaitGroup
	)
	for range o.conc {
		wg.Go(func() {
			for i := range ops {
				if err := operation(ctx, client, url, key(runID, i)); err != nil {
					failed.Add(1)
					firstMu.Lock()
					if first == nil {
						first = fmt.Errorf("operation %d: %w", i, err)
					}
					firstMu.Unlock()
				}
				done.Add(1)
			}
		})
	}

	// The killer: each kill once a share of the operations has finished,
	// so that kills are spread over the run and land while it goes on.
	kills := 0
	var killErr error
	killed := make(chan struct{})
	go func() {
		defer close(killed) // also lets the last operations go
		for k := range o.kills {
			threshold := int64(o.ops * (k + 1) / (o.kills + 1))
			for done.Load() < threshold && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond) // bounded by ctx
			}
			if ctx.Err() != nil || done.Load() >= int64(o.ops) {
				return
			}
			if killErr = ctl("kill"); killErr != nil {
				return
			}
			kills++
			time.Sleep(o.down + time.Duration(mrand.Int64N(int64(o.down)+1)))
			if killErr = ctl("start"); killErr != nil {
				return
			}
		}
	}()

	// The second half of the operations after the last kill's share is
	// held back until every kill has happened: however fast the others
	// finish after a restart, the last kill still finds operations to land
	// among.
	tail := o.ops - max(o.ops/(2*(o.kills+1)), 1)
	for i := range o.ops {
		if i == tail && o.kills > 0 {
			select {
			case <-killed:
			case <-ctx.Done():
			}
		}
		ops <- i
	}
	close(ops)
	wg.Wait()
	cancel() // the killer stops waiting
	<-killed
	if killErr != nil {
		return killErr
	}
	if err := ctl("status"); err != nil {
		if err := ctl("start"); err != nil {
			return err
		}
	}

	// Count with a fresh context: the run's may be over.
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	perKey := map[string]int{}
	rows, err := db.QueryContext(cctx, "SELECT idem_key, count(*) FROM "+charges+" GROUP BY idem_key")
	if err != nil {
		return err
	}
	total := 0
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		perKey[k] = n
		total += n
	}
	if err := rows.Close(); err != nil {
		return err
	}
	var records int
	if err := db.QueryRowContext(cctx, "SELECT count(*) FROM "+table+" WHERE state = 'completed'").Scan(&records); err != nil {
		return err
	}
	duplicates, lost := 0, 0
	for i := range o.ops {
		switch n := perKey[key(runID, i)]; {
		case n == 0:
			lost++
		case n > 1:
			duplicates += n - 1
		}
	}
	fmt.Printf("operations=%d rows=%d duplicates=%d lost=%d kills=%d\n", o.ops, total, duplicates, lost, kills)
	switch {
	case first != nil:
		return fmt.Errorf("%d operations did not complete; the first: %v", failed.Load(), first)
	case duplicates != 0 || lost != 0 || total != o.ops:
		return fmt.Errorf("%d duplicates, %d lost, %d rows for %d operations", duplicates, lost, total, o.ops)
	case records != o.ops && !o.naive:
		return fmt.Errorf("%d completed records for %d operations", records, o.ops)
	case kills != o.kills:
		return fmt.Errorf("%d kills happened of %d asked: the operations finished first (raise -ops)", kills, o.kills)
	}
	return nil
}

func key(runID string, i int) string { return fmt.Sprintf("chaos-%s-%d", runID, i) }

// operation sends one charge until the API answers 201: the client retries
// within a call, and a call that gives up is made again with the same key
// and body, as a caller with an unknown outcome does, until ctx ends.
func operation(ctx context.Context, client *idem.Client, url, key string) error {
	var last error
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(`{"amount":1000}`)))
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode == http.StatusCreated {
			return nil
		}
		last = fmt.Errorf("answer %d", resp.StatusCode)
	}
	return cmp.Or(last, ctx.Err())
}

// serve starts the charges API on loopback and returns its URL and a
// function that stops it. The handler charges in the work's transaction,
// with a pause before and after the write such as real work has, so that
// kills find transactions open. The naive API has no middleware: it
// charges in a statement of its own and then reads the database again
// before it answers, so that a kill in between leaves a charge whose
// answer is an error, and the client's retry charges again.
func serve(store *mysqlstore.Store, db *sql.DB, charges string, naive bool) (string, func(), error) {
	var h http.Handler
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, ok := mysqlstore.Tx(r.Context())
		if !ok {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		time.Sleep(time.Duration(mrand.IntN(3)) * time.Millisecond)
		if _, err := tx.ExecContext(r.Context(), "INSERT INTO "+charges+" (idem_key, amount) VALUES (?, 1000)", r.Header.Get("Idempotency-Key")); err != nil {
			http.Error(w, "charge failed", http.StatusServiceUnavailable)
			return
		}
		time.Sleep(time.Duration(mrand.IntN(3)) * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"status":"charged"}`)
	})
	h = server.Middleware(store, server.Options{SingleTenant: true})(h)
	if naive {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := db.ExecContext(r.Context(), "INSERT INTO "+charges+" (idem_key, amount) VALUES (?, 1000)", r.Header.Get("Idempotency-Key")); err != nil {
				http.Error(w, "charge failed", http.StatusServiceUnavailable)
				return
			}
			if _, err := db.ExecContext(r.Context(), "DO SLEEP(0.003)"); err != nil {
				http.Error(w, "charged, then the database failed", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/charges", func() { _ = srv.Close() }, nil
}

// findScript returns path, or scripts/mariadb.sh in the working directory
// or the nearest directory above it that has one.
func findScript(path string) (string, error) {
	if path != "" {
		return filepath.Abs(path)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 32 {
		p := filepath.Join(dir, "scripts", "mariadb.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("scripts/mariadb.sh not found above the working directory: pass -script")
}
