package natsidem_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/natsidem"
	"github.com/idemhq/idem/server/pgstore"
)

// BenchmarkConsume measures messages per second through one consumer
// that handles one message at a time, each effect an INSERT into
// PostgreSQL:
//
//   - bare: the INSERT in a transaction of its own, then the ack (at
//     least once: a crash between the commit and the ack doubles it);
//   - natsidem: Handle on pgstore in transactional mode, the INSERT in
//     idem's transaction, committed with the message's record, then the
//     ack (exactly once).
//
// The ratio of the two is what exactly once costs. It needs
// IDEM_TEST_DATABASE, and uses IDEM_TEST_NATS or an embedded server:
//
//	IDEM_TEST_DATABASE=... IDEM_TEST_NATS=nats://127.0.0.1:4222 \
//	    go test -run XXX -bench Consume -benchtime 2000x ./natsidem
func BenchmarkConsume(b *testing.B) {
	url := os.Getenv("IDEM_TEST_NATS")
	if url == "" {
		url = embedded(b)
	}
	pool, store := pgStore(b)
	ctx := context.Background()
	table := fmt.Sprintf("natsidem_bench_%d_%d", os.Getpid(), uniq.Add(1))
	_, err := pool.Exec(ctx, "CREATE TABLE "+pgx.Identifier{table}.Sanitize()+" (msg_id text NOT NULL, data bytea NOT NULL)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE "+pgx.Identifier{table}.Sanitize()) })
	insert := "INSERT INTO " + pgx.Identifier{table}.Sanitize() + " (msg_id, data) VALUES ($1, $2)"

	bare := func(msg jetstream.Msg) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, insert, msg.Headers().Get(jetstream.MsgIDHeader), msg.Data()); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		return msg.Ack()
	}
	work := func(ctx context.Context, msg jetstream.Msg) error {
		tx, _ := pgstore.Tx(ctx)
		_, err := tx.Exec(ctx, insert, msg.Headers().Get(jetstream.MsgIDHeader), msg.Data())
		return err
	}
	idem := func(msg jetstream.Msg) error {
		d, err := natsidem.Handle(ctx, store, msg, work, natsidem.Options{})
		if err != nil {
			return err
		}
		if d.Action != natsidem.Ack {
			return fmt.Errorf("%s: %w", d.Action, d.Err)
		}
		return nil
	}

	for _, v := range []struct {
		name   string
		handle func(jetstream.Msg) error
	}{{"bare", bare}, {"natsidem", idem}} {
		b.Run(v.name, func(b *testing.B) {
			js, cons, subject := stream(b, url, 30*time.Second)
			body := []byte(`{"order":1,"amount":4200,"currency":"EUR"}`)
			for i := range b.N {
				if _, err := natsidem.Publish(ctx, js, subject+".order", fmt.Sprintf("%s-%d", v.name, i), body, natsidem.PublishOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			var handled atomic.Int64
			var failed atomic.Value
			done := make(chan struct{})
			b.ResetTimer()
			cc, err := cons.Consume(func(msg jetstream.Msg) {
				if err := v.handle(msg); err != nil {
					failed.CompareAndSwap(nil, err)
				}
				if handled.Add(1) == int64(b.N) {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			<-done
			b.StopTimer()
			cc.Stop()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}
