package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
