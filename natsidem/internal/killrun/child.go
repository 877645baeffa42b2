package main

// This file holds the consumer: one process, killed by the parent or by
// itself, consuming the run's stream in one of the three variants.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/natsidem"
	"github.com/idemhq/idem/server/pgstore"
)

// consumerName is the durable consumer of the run's stream.
const consumerName = "killrun"

// killer kills this process with SIGKILL on entering stage of its
// after-th message, if told to, or of the first message after it that
// enters the stage: a message redelivered after a kill may be answered
// from its record, and then never enters the stages of the work.
type killer struct {
	stage string
	after int
	seen  int // messages received by this process
}

func (k *killer) at(stage string) {
	if k.stage == stage && k.seen >= k.after {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

func runChild(c config, killStage string, killAfter int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(c.natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, c.stream, consumerName)
	if err != nil {
		return err
	}
	pcfg, err := pgxpool.ParseConfig(c.dsn)
	if err != nil {
		return err
	}
	pcfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{Table: c.keys, Transactional: true})
	if err != nil {
		return err
	}
	defer store.Close()

	k := &killer{stage: killStage, after: killAfter}
	insert := fmt.Sprintf("INSERT INTO %s (msg_id, delivered, pid) VALUES ($1, $2, $3)", pgx.Identifier{c.effects}.Sanitize())
	opts := natsidem.Options{RetryDelay: 100 * time.Millisecond, MaxRetryDelay: time.Second, InFlightDelay: 200 * time.Millisecond}
	handle := func(msg jetstream.Msg) (string, error) {
		k.seen++
		k.at(stageReceived)
		id := msg.Headers().Get(jetstream.MsgIDHeader)
		switch {
		case c.noIdem:
			// At least once, without idem: the effect in a transaction of
			// its own, then the ack.
			tx, err := pool.Begin(ctx)
			if err != nil {
				msg.NakWithDelay(opts.RetryDelay)
				return id, err
			}
			if err := effectTx(ctx, tx, insert, msg); err != nil {
				tx.Rollback(ctx)
				msg.NakWithDelay(opts.RetryDelay)
				return id, err
			}
			k.at(stageEffect) // written, not committed
			if err := tx.Commit(ctx); err != nil {
				msg.NakWithDelay(opts.RetryDelay)
				return id, err
			}
			k.at(stageRecorded)
			err = msg.Ack()
			k.at(stageAcked)
			return id, err
		case c.ackFirst:
			// Ack first, then RunOnce: the ack is confirmed before the
			// work begins, and the Handle's own ack is a no-op.
			if err := msg.DoubleAck(ctx); err != nil {
				return id, err
			}
			k.at(stageAcked)
			d, err := natsidem.Handle(ctx, store, ackedMsg{msg}, func(ctx context.Context, m jetstream.Msg) error {
				tx, _ := pgstore.Tx(ctx)
				if err := effectTx(ctx, tx, insert, m); err != nil {
					return err
				}
				k.at(stageEffect)
				return nil
			}, opts)
			k.at(stageRecorded)
			return id, firstErr(err, d.Err)
		}
		d, err := natsidem.Handle(ctx, store, stagedMsg{msg, k}, func(ctx context.Context, m jetstream.Msg) error {
			tx, _ := pgstore.Tx(ctx)
			if err := effectTx(ctx, tx, insert, m); err != nil {
				return err
			}
			k.at(stageEffect) // written in idem's transaction, not committed
			return nil
		}, opts)
		return id, firstErr(err, d.Err)
	}

	cc, err := cons.Consume(func(msg jetstream.Msg) {
		id, err := handle(msg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "killrun consumer: %s: %v\n", id, err)
		}
		fmt.Fprintf(os.Stdout, "done %s\n", id) // read by the parent
	}, jetstream.PullMaxMessages(8), jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {}))
	if err != nil {
		return err
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}

// effectTx writes msg's effect row in tx, and takes a moment, as real work
// does, so that a kill from the parent lands inside the work too.
func effectTx(ctx context.Context, tx interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, insert string, msg jetstream.Msg) error {
	var delivered uint64
	if meta, err := msg.Metadata(); err == nil {
		delivered = meta.NumDelivered
	}
	if _, err := tx.Exec(ctx, insert, msg.Headers().Get(jetstream.MsgIDHeader), delivered, os.Getpid()); err != nil {
		return err
	}
	time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
	return nil
}

// stagedMsg passes the stages around Handle's ack: recorded on the way in,
// acked on the way out.
type stagedMsg struct {
	jetstream.Msg
	k *killer
}

func (m stagedMsg) Ack() error {
	m.k.at(stageRecorded)
	err := m.Msg.Ack()
	m.k.at(stageAcked)
	return err
}

// ackedMsg is a message acked already: Handle's ack does nothing.
type ackedMsg struct{ jetstream.Msg }

func (ackedMsg) Ack() error { return nil }

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
