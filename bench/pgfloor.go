package main

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// pgFloors are the floors under every PostgreSQL figure, measured in the
// same rounds as the rows above them: one round trip, and one durable
// commit of one row.
type pgFloors struct {
	select1    sample // SELECT 1: one round trip, no transaction
	insert     sample // a one-row autocommit INSERT, durable: the commit waits for its WAL flush
	syncCommit string // the session's synchronous_commit, as the server reported it
}

// floorConn is the connection the floors are measured on: a connection of
// its own, so no pool is in the way, with synchronous_commit set to on in
// its startup packet whatever the server's default.
type floorConn struct {
	conn       *pgx.Conn
	table      string
	syncCommit string
	seq        int64
}

func openFloor(dsn string) *floorConn {
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	cc, err := pgx.ParseConfig(dsn)
	must(err)
	cc.RuntimeParams["synchronous_commit"] = "on"
	conn, err := pgx.ConnectConfig(ctx, cc)
	must(err)
	f := &floorConn{conn: conn, table: tableName("floor")}
	must(conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&f.syncCommit))
	// The row is the size of a charge: an id, the client, an amount, a
	// currency and a reference.
	_, err = conn.Exec(ctx, "CREATE TABLE "+f.table+` (
		id bigint PRIMARY KEY,
		client_id text NOT NULL,
		amount bigint NOT NULL,
		currency text NOT NULL,
		ref text NOT NULL)`)
	must(err)
	return f
}

// measure appends n of each floor to into, alternating them.
func (f *floorConn) measure(n int, into *pgFloors) {
	ctx := context.Background()
	q := "INSERT INTO " + f.table + " (id, client_id, amount, currency, ref) VALUES ($1, 'bench', 1000, 'usd', 'bench')"
	for range n {
		var one int
		start := time.Now()
		must(f.conn.QueryRow(ctx, "SELECT 1").Scan(&one))
		into.select1 = append(into.select1, time.Since(start))

		f.seq++
		start = time.Now()
		_, err := f.conn.Exec(ctx, q, f.seq)
		into.insert = append(into.insert, time.Since(start))
		must(err)
	}
}

func (f *floorConn) close() {
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	f.conn.Exec(ctx, "DROP TABLE IF EXISTS "+f.table)
	f.conn.Close(ctx)
}

func (p *pgFloors) print() {
	t := &table{title: "Server: PostgreSQL floors, pgx on one connection, no HTTP", head: []string{"statement", "p50", "p99"}}
	t.add("SELECT 1 (one round trip)", ms(p.select1.median()), ms(p.select1.p99()))
	t.add(fmt.Sprintf("one-row INSERT, autocommit, synchronous_commit = %s (one durable commit)", p.syncCommit), ms(p.insert.median()), ms(p.insert.p99()))
	t.notes = append(t.notes, "Measured in the same rounds as the table above, so every PostgreSQL figure has its floor beside it.")
	t.print()
}

// The hand-written floors of a pgstore new key: the charges handler's
// work (decode the body, insert the charge, answer it) with the rows
// pgstore writes, sent by hand on the same pool, without the middleware.
// Each keeps the idempotency record in a table of pgstore's schema, takes
// the key's transaction-scoped advisory lock (its 64-bit key computed in
// Go), and commits the charge with the record, durably.
const (
	// floorThree is pgstore's design by hand: three round trips, as
	// pgstore's ClaimWork and Commit send them.
	floorThree = "floor: 3 round trips by hand (BEGIN + lock + lookup / INSERT charge / INSERT record + COMMIT)"
	// floorPipelined is the same rows in one round trip: the floor of
	// any design that claims and commits in one pipelined transaction.
	floorPipelined = "floor: 1 pipelined transaction by hand (BEGIN + lock, INSERT charge, INSERT record, COMMIT)"
	// floorTwo is the design of pgstore's pipelined claim by hand: the
	// claim with the charge, then the record with COMMIT.
	floorTwo = "floor: 2 round trips by hand (BEGIN + lock + guard + INSERT charge / INSERT record + COMMIT)"
)

// handFloor serves POST /charges with the floors' SQL.
type handFloor struct {
	pool    *pgxpool.Pool
	charges string // the charges table
	records string // the idempotency records, pgstore's schema
	trips   int    // 1, 2 or 3: floorPipelined, floorTwo, floorThree
}

// newHandFloor creates the floor's tables (the records' through
// pgstore.Migrate, so they are pgstore's) and returns the handler and
// what to drop afterwards.
func newHandFloor(pool *pgxpool.Pool, trips int) (*handFloor, []string) {
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	h := &handFloor{pool: pool, charges: tableName("floor_charges"), trips: trips}
	h.records = h.charges + "_keys"
	_, err := pool.Exec(ctx, "CREATE TABLE "+h.charges+` (
		id text PRIMARY KEY,
		client_id text NOT NULL,
		amount bigint NOT NULL,
		currency text NOT NULL,
		ref text NOT NULL DEFAULT '',
		created_at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	must(err)
	_, err = pool.Exec(ctx, "CREATE INDEX ON "+h.charges+" (client_id, created_at)")
	must(err)
	st, err := pgstore.New(pool, pgstore.Options{Table: h.records})
	must(err)
	must(st.Migrate(ctx))
	st.Close()
	return h, []string{h.charges, h.records}
}

const (
	floorBegin  = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE"
	floorLookup = `SELECT fingerprint, token, state = 'completed', coalesce(status, 0), header, body, expires_at,
       expires_at < statement_timestamp()
FROM %s WHERE scope = $1 AND key = $2`
	floorInsert = `INSERT INTO %s (scope, key, fingerprint, token, state, status, header, body, claimed_at, expires_at)
VALUES ($1, $2, $3, $4, 'completed', $5, $6, $7, transaction_timestamp(), statement_timestamp() + interval '24 hours')`
	floorCharge = `INSERT INTO %s (id, client_id, amount, currency, ref) VALUES ($1, $2, $3, $4, $5)`
	// floorLockOrFail takes the lock, or fails the statement (division by
	// zero) so that the pipelined transaction aborts: the pipelined
	// floor's claim.
	floorLockOrFail = `SELECT 1 / pg_try_advisory_xact_lock($1)::integer`
	// floorGuard fails the statement if the key has a record: the
	// two-round-trip floor's claim, after floorLockOrFail.
	floorGuard = `SELECT 1 / (NOT EXISTS (SELECT FROM %s WHERE scope = $1 AND key = $2))::integer`
)

func (h *handFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	client := r.Header.Get(charges.ClientHeader)
	key := r.Header.Get("Idempotency-Key")
	var req struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
		Ref      string `json:"ref"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if client == "" || key == "" || dec.Decode(&req) != nil || req.Amount <= 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var idb [8]byte
	crand.Read(idb[:])
	id := "ch_" + hex.EncodeToString(idb[:])
	body, _ := json.Marshal(map[string]any{"id": id, "amount": req.Amount, "currency": req.Currency, "ref": req.Ref})
	body = append(body, '\n')
	sum := sha256.Sum256([]byte(h.records + ":" + strconv.Itoa(len(client)) + ":" + client + key))
	lock := int64(binary.BigEndian.Uint64(sum[:8]))
	header := []byte("Content-Type\x00application/json") // a stand-in of the stored header's size
	conn, err := h.pool.Acquire(ctx)
	if err != nil {
		http.Error(w, "no connection", http.StatusServiceUnavailable)
		return
	}
	defer conn.Release()
	charge := []any{id, client, req.Amount, req.Currency, req.Ref}
	record := []any{client, key, "fp", crand.Text(), int32(http.StatusCreated), header, body}
	b := &pgx.Batch{}
	b.Queue(floorBegin)
	switch h.trips {
	case 2:
		b.Queue(floorLockOrFail, lock)
		b.Queue(fmt.Sprintf(floorGuard, h.records), client, key)
		b.Queue(fmt.Sprintf(floorCharge, h.charges), charge...)
		err = conn.SendBatch(ctx, b).Close()
		if err == nil {
			b = &pgx.Batch{}
			b.Queue(fmt.Sprintf(floorInsert, h.records), record...)
			b.Queue("COMMIT")
			err = conn.SendBatch(ctx, b).Close()
		}
	case 1:
		b.Queue(floorLockOrFail, lock)
		b.Queue(fmt.Sprintf(floorCharge, h.charges), charge...)
		b.Queue(fmt.Sprintf(floorInsert, h.records), record...)
		b.Queue("COMMIT")
		err = conn.SendBatch(ctx, b).Close()
	default:
		var locked bool
		b.Queue("SELECT pg_try_advisory_xact_lock($1)", lock)
		b.Queue(fmt.Sprintf(floorLookup, h.records), client, key)
		br := conn.SendBatch(ctx, b)
		_, err = br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&locked)
		}
		if err == nil {
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				found := rows.Next()
				rows.Close()
				if err = rows.Err(); err == nil && (found || !locked) {
					err = fmt.Errorf("key %q not new", key)
				}
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			_, err = conn.Exec(ctx, fmt.Sprintf(floorCharge, h.charges), charge...)
		}
		if err == nil {
			b = &pgx.Batch{}
			b.Queue(fmt.Sprintf(floorInsert, h.records), record...)
			b.Queue("COMMIT")
			err = conn.SendBatch(ctx, b).Close()
		}
	}
	if err != nil {
		conn.Exec(context.Background(), "ROLLBACK")
		http.Error(w, "floor failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

// floorReplay is the floor of a pgstore replay: what no design that reads
// the record from PostgreSQL can beat.
const floorReplay = "floor: replay by hand (1 autocommit SELECT of the record + the bare in-memory handler)"

// replayFloor serves POST /charges as the floor of a replay: one
// autocommit SELECT of a completed record, by hand, in a table of
// pgstore's schema on the same pool, then the bare in-memory handler.
type replayFloor struct {
	pool    *pgxpool.Pool
	records string
	bare    http.Handler
}

// newReplayFloor creates the floor's table (through pgstore.Migrate, so
// it is pgstore's), stores the one record it reads, and returns the
// handler and the table to drop afterwards.
func newReplayFloor(pool *pgxpool.Pool) (*replayFloor, string) {
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	f := &replayFloor{pool: pool, records: tableName("floor_replay")}
	st, err := pgstore.New(pool, pgstore.Options{Table: f.records})
	must(err)
	must(st.Migrate(ctx))
	st.Close()
	body := []byte(`{"amount":1000,"currency":"usd","id":"ch_0123456789abcdef","ref":"bench"}` + "\n")
	_, err = pool.Exec(ctx, fmt.Sprintf(floorInsert, f.records), "bench", floorReplayKey, "fp", crand.Text(),
		int32(http.StatusCreated), []byte("Content-Type\x00application/json"), body)
	must(err)
	svc, err := charges.New(ctx, charges.Config{Optional: true})
	must(err)
	f.bare = svc.Handler()
	return f, f.records
}

// floorReplayKey is the key of the record the replay floor reads.
const floorReplayKey = "replay-floor"

// floorStored is pgstore's read of a completed record inside its
// retention.
const floorStored = floorLookup + "\n  AND state = 'completed' AND expires_at >= statement_timestamp()"

func (f *replayFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var (
		fp, token     string
		done, expired bool
		status        int32
		header, body  []byte
		expiresAt     time.Time
	)
	err := f.pool.QueryRow(r.Context(), fmt.Sprintf(floorStored, f.records), r.Header.Get(charges.ClientHeader), floorReplayKey).
		Scan(&fp, &token, &done, &status, &header, &body, &expiresAt, &expired)
	if err != nil {
		http.Error(w, "floor failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	r.Header.Del("Idempotency-Key") // the bare handler takes none
	w.Header().Set(server.ReplayedHeader, "true")
	f.bare.ServeHTTP(w, r)
}
