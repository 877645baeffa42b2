package charges

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server/pgstore"
)

// pgLedger keeps charges in a PostgreSQL table. A first execution's charge
// is a row inserted in the request's transaction (pgstore.Tx), which
// commits together with the stored response.
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
