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
// The ratio of the two (natsidem's rate over bare's) is what exactly once
// costs. It needs
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

	// The two run in alternate rounds of up to 100 messages each, so that
	// a machine whose load drifts during the run slows both alike.
	variants := []struct {
		name    string
		handle  func(jetstream.Msg) error
		elapsed time.Duration
	}{{"bare", bare, 0}, {"natsidem", idem, 0}}
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		n := min(100, b.N-done)
		for i := range variants {
			v := &variants[(i+round)%2]
			v.elapsed += consumeN(b, url, fmt.Sprintf("%s-%d", v.name, round), n, v.handle)
		}
		done += n
	}
	bareRate := float64(b.N) / variants[0].elapsed.Seconds()
	idemRate := float64(b.N) / variants[1].elapsed.Seconds()
	b.ReportMetric(bareRate, "bare-msg/s")
	b.ReportMetric(idemRate, "natsidem-msg/s")
	b.ReportMetric(idemRate/bareRate, "ratio")
}

// consumeN publishes n messages to a stream of their own, untimed, and
// returns how long one consumer took to handle them all with handle.
func consumeN(b *testing.B, url, prefix string, n int, handle func(jetstream.Msg) error) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	js, cons, subject := stream(b, url, 30*time.Second)
	body := []byte(`{"order":1,"amount":4200,"currency":"EUR"}`)
	for i := range n {
		if _, err := natsidem.Publish(ctx, js, subject+".order", fmt.Sprintf("%s-%d", prefix, i), body, natsidem.PublishOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var handled atomic.Int64
	var failed atomic.Value
	done := make(chan struct{})
	b.StartTimer()
	start := time.Now()
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if err := handle(msg); err != nil {
			failed.CompareAndSwap(nil, err)
		}
		if handled.Add(1) == int64(n) {
			close(done)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	cc.Stop()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return elapsed
}
