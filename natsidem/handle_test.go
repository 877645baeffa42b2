package natsidem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/natsidem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

func TestKeyOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 253)
	tests := []struct {
		name  string
		msg   *fakeMsg
		scope string
		want  server.Key
	}{
		{"Nats-Msg-Id", newFakeMsg("ORDERS", 7, "order-17", "{}"), "", server.Key{Scope: "nats/ORDERS", Key: "id:order-17"}},
		{"stream sequence", newFakeMsg("ORDERS", 7, "", "{}"), "", server.Key{Scope: "nats/ORDERS", Key: "seq:ORDERS:7"}},
		{"scope given", newFakeMsg("ORDERS", 7, "order-17", "{}"), "billing", server.Key{Scope: "billing", Key: "id:order-17"}},
		{"scope given, sequence names the stream", newFakeMsg("ORDERS", 7, "", "{}"), "billing", server.Key{Scope: "billing", Key: "seq:ORDERS:7"}},
		{"an ID that is no key", newFakeMsg("ORDERS", 7, "order,17", "{}"), "", server.Key{Scope: "nats/ORDERS", Key: "id-sha256:" + sha("order,17")}},
		{"an ID too long", newFakeMsg("ORDERS", 7, long, "{}"), "", server.Key{Scope: "nats/ORDERS", Key: "id-sha256:" + sha(long)}},
		{"the longest ID kept", newFakeMsg("ORDERS", 7, long[:252], "{}"), "", server.Key{Scope: "nats/ORDERS", Key: "id:" + long[:252]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := natsidem.KeyOf(tt.msg, tt.scope)
			require.NoError(t, err)
			assert.Equal(t, tt.want, k)
		})
	}
	_, err := natsidem.KeyOf(&fakeMsg{}, "")
	require.ErrorIs(t, err, natsidem.ErrNotJetStream)
}

// TestHandle: each outcome settles the message as documented, and only a
// first delivery runs the work.
func TestHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	errFail := errors.New("downstream unavailable")
	tests := []struct {
		name    string
		before  []string // data of earlier deliveries of the same message, all run with success
		data    string
		err     error // the work's
		want    natsidem.Disposition
		wantErr error // in Disposition.Err
		settled string
	}{
		{name: "first delivery", data: "a", want: natsidem.Disposition{Action: natsidem.Ack}, settled: "ack"},
		{name: "redelivery", before: []string{"a"}, data: "a", want: natsidem.Disposition{Action: natsidem.Ack, Replayed: true}, settled: "ack"},
		{name: "retryable error", data: "a", err: errFail, want: natsidem.Disposition{Action: natsidem.Nak, Delay: time.Second}, wantErr: errFail, settled: "nak"},
		{name: "permanent error", data: "a", err: fmt.Errorf("%w: no such account", natsidem.ErrPermanent), want: natsidem.Disposition{Action: natsidem.Term}, wantErr: natsidem.ErrPermanent, settled: "term"},
		{name: "ID reused with another body", before: []string{"a"}, data: "b", want: natsidem.Disposition{Action: natsidem.Term}, wantErr: server.ErrKeyReused, settled: "term"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memstore.New(memstore.Options{})
			runs := 0
			work := func(err error) natsidem.Work {
				return func(context.Context, jetstream.Msg) error { runs++; return err }
			}
			for _, data := range tt.before {
				_, err := natsidem.Handle(ctx, store, newFakeMsg("S", 1, "m-1", data), work(nil), natsidem.Options{})
				require.NoError(t, err)
			}
			msg := newFakeMsg("S", 1, "m-1", tt.data)
			d, err := natsidem.Handle(ctx, store, msg, work(tt.err), natsidem.Options{})
			require.NoError(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, d.Err, tt.wantErr)
			} else {
				require.NoError(t, d.Err)
			}
			d.Err = nil
			assert.Equal(t, tt.want, d)
			assert.Equal(t, []string{tt.settled}, msg.settlements())
			assert.Equal(t, max(len(tt.before), 1), runs)
		})
	}
}

// TestHandleRetryDelay: a retryable failure's delay doubles with each
// delivery, up to the cap.
func TestHandleRetryDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	fail := func(context.Context, jetstream.Msg) error { return errors.New("later") }
	tests := []struct {
		opts      natsidem.Options
		delivered uint64
		want      time.Duration
	}{
		{natsidem.Options{}, 0, time.Second},
		{natsidem.Options{}, 1, time.Second},
		{natsidem.Options{}, 2, 2 * time.Second},
		{natsidem.Options{}, 6, 32 * time.Second},
		{natsidem.Options{}, 7, time.Minute},
		{natsidem.Options{}, 1 << 40, time.Minute},
		{natsidem.Options{RetryDelay: 100 * time.Millisecond, MaxRetryDelay: time.Second}, 4, 800 * time.Millisecond},
		{natsidem.Options{RetryDelay: 100 * time.Millisecond, MaxRetryDelay: time.Second}, 5, time.Second},
		{natsidem.Options{RetryDelay: time.Hour, MaxRetryDelay: time.Second}, 1, time.Hour},
	}
	for i, tt := range tests {
		msg := newFakeMsg("S", uint64(i+1), "", "x")
		msg.meta.NumDelivered = tt.delivered
		d, err := natsidem.Handle(ctx, store, msg, fail, tt.opts)
		require.NoError(t, err)
		assert.Equal(t, natsidem.Nak, d.Action)
		assert.Equal(t, tt.want, d.Delay, "delivery %d with %+v", tt.delivered, tt.opts)
		assert.Equal(t, tt.want, msg.delay)
	}
}

// TestHandleInFlight: a delivery whose message another delivery is
// running is nakked with InFlightDelay, and a later one replays.
func TestHandleInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	started, finish := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	done := make(chan natsidem.Disposition, 1)
	go func() {
		d, _ := natsidem.Handle(ctx, store, newFakeMsg("S", 1, "m-1", "a"), func(context.Context, jetstream.Msg) error {
			runs.Add(1)
			close(started)
			<-finish
			return nil
		}, natsidem.Options{})
		done <- d
	}()
	<-started
	count := func(context.Context, jetstream.Msg) error { runs.Add(1); return nil }
	msg := newFakeMsg("S", 1, "m-1", "a")
	d, err := natsidem.Handle(ctx, store, msg, count, natsidem.Options{InFlightDelay: 3 * time.Second})
	require.NoError(t, err)
	require.ErrorIs(t, d.Err, server.ErrInFlight)
	assert.Equal(t, natsidem.Nak, d.Action)
	assert.Equal(t, 3*time.Second, d.Delay)
	close(finish)
	assert.Equal(t, natsidem.Ack, (<-done).Action)
	d, err = natsidem.Handle(ctx, store, newFakeMsg("S", 1, "m-1", "a"), count, natsidem.Options{})
	require.NoError(t, err)
	assert.Equal(t, natsidem.Disposition{Action: natsidem.Ack, Replayed: true}, d)
	assert.Equal(t, int64(1), runs.Load())
}

// TestHandleFailures: a panic naks and goes on up; a store that fails
// naks; a message without metadata is terminated (which fails too); a
// run whose outcome could not be recorded is acked, with the error.
func TestHandleFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	msg := newFakeMsg("S", 1, "m-1", "a")
	store := memstore.New(memstore.Options{})
	assert.PanicsWithValue(t, "boom", func() {
		natsidem.Handle(ctx, store, msg, func(context.Context, jetstream.Msg) error { panic("boom") }, natsidem.Options{})
	})
	assert.Equal(t, []string{"nak"}, msg.settlements())
	d, err := natsidem.Handle(ctx, store, newFakeMsg("S", 1, "m-1", "a"), func(context.Context, jetstream.Msg) error { return nil }, natsidem.Options{})
	require.NoError(t, err)
	assert.Equal(t, natsidem.Disposition{Action: natsidem.Ack}, d, "the panic released the key")

	msg = newFakeMsg("S", 1, "m-1", "a")
	d, err = natsidem.Handle(ctx, failingStore{store}, msg, nil, natsidem.Options{})
	require.NoError(t, err)
	assert.Equal(t, natsidem.Nak, d.Action)
	assert.Equal(t, time.Second, d.Delay)
	assert.NotErrorIs(t, d.Err, server.ErrInFlight)

	d, err = natsidem.Handle(ctx, store, &fakeMsg{}, nil, natsidem.Options{})
	require.ErrorIs(t, err, jetstream.ErrMsgNotBound)
	assert.Equal(t, natsidem.Term, d.Action)
	require.ErrorIs(t, d.Err, natsidem.ErrNotJetStream)

	runs := 0
	msg = newFakeMsg("S", 2, "m-2", "a")
	d, err = natsidem.Handle(ctx, unrecordedStore{memstore.New(memstore.Options{})}, msg, func(context.Context, jetstream.Msg) error { runs++; return nil }, natsidem.Options{})
	require.NoError(t, err)
	assert.Equal(t, natsidem.Ack, d.Action)
	require.Error(t, d.Err)
	assert.Equal(t, 1, runs)
	assert.Equal(t, []string{"ack"}, msg.settlements())
}

// failingStore fails every claim.
type failingStore struct{ server.Store }

func (failingStore) Claim(context.Context, server.Key, string, time.Duration) (server.Claim, error) {
	return server.Claim{}, errors.New("connection refused")
}

// unrecordedStore fails every Complete.
type unrecordedStore struct{ server.Store }

func (unrecordedStore) Complete(context.Context, server.Key, string, server.StoredResponse, time.Duration) error {
	return errors.New("connection reset")
}

// lossyMsg loses the first Ack of every message, as a consumer that dies
// after the outcome is recorded and before its ack reaches the server
// does: JetStream delivers the message again after AckWait.
type lossyMsg struct {
	jetstream.Msg
	lose  *sync.Map // stream sequence → its first Ack was lost
	acked chan<- uint64
}

func (m lossyMsg) Ack() error {
	meta, err := m.Metadata()
	if err != nil {
		return err
	}
	if _, lost := m.lose.LoadOrStore(meta.Sequence.Stream, true); !lost {
		return nil // lost on the way
	}
	if err := m.Msg.Ack(); err != nil {
		return err
	}
	m.acked <- meta.Sequence.Stream
	return nil
}

// TestConsumeAckLost runs on a real JetStream (the embedded server and,
// with IDEM_TEST_NATS, the machine's): every message's first ack is lost,
// so every message is delivered again. Through Handle each effect happens
// once, and the redelivery is replayed; the naive consumer in the same
// test, which runs the effect and acks, runs every effect twice.
func TestConsumeAckLost(t *testing.T) {
	t.Parallel()
	const n = 20
	for _, tg := range targets(t) {
		for sname, newStore := range stores(t) {
			t.Run(tg.name+"/"+sname, func(t *testing.T) {
				t.Parallel()
				consumeAckLost(t, tg, newStore(t), n)
			})
		}
	}
}

func consumeAckLost(t *testing.T, tg target, store server.Store, n int) {
	for _, naive := range []bool{false, true} {
		js, cons, subject := stream(t, tg.url, 300*time.Millisecond)
		ctx := context.Background()
		for i := range n {
			_, err := natsidem.Publish(ctx, js, subject+".created", fmt.Sprintf("order-%d", i), fmt.Appendf(nil, `{"order":%d}`, i), natsidem.PublishOptions{})
			require.NoError(t, err)
		}
		var mu sync.Mutex
		effects := map[string]int{}
		var replays atomic.Int64
		effect := func(_ context.Context, msg jetstream.Msg) error {
			mu.Lock()
			effects[msg.Headers().Get(jetstream.MsgIDHeader)]++
			mu.Unlock()
			return nil
		}
		acked := make(chan uint64, 4*n)
		var lose sync.Map
		cc, err := cons.Consume(func(msg jetstream.Msg) {
			m := lossyMsg{Msg: msg, lose: &lose, acked: acked}
			if naive {
				if err := effect(ctx, m); err == nil {
					m.Ack()
				}
				return
			}
			d, err := natsidem.Handle(ctx, store, m, effect, natsidem.Options{})
			assert.NoError(t, err)
			assert.NoError(t, d.Err)
			if d.Replayed {
				replays.Add(1)
			}
		})
		require.NoError(t, err)
		for range n {
			select {
			case <-acked:
			case <-time.After(time.Minute): // a bound, not a measurement
				t.Fatal("messages not acked")
			}
		}
		cc.Stop()
		want := 1
		if naive {
			want = 2
		}
		mu.Lock()
		assert.Len(t, effects, n)
		for id, runs := range effects {
			assert.Equal(t, want, runs, "naive=%v %s", naive, id)
		}
		mu.Unlock()
		if !naive {
			assert.Equal(t, int64(n), replays.Load(), "every redelivery replayed")
		}
	}
}

// TestPublish: every attempt at a message carries its ID, so a repeat
// within the stream's duplicate window is not stored again; an invalid ID
// is refused before anything is sent.
func TestPublish(t *testing.T) {
	t.Parallel()
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			js, _, subject := stream(t, tg.url, time.Second)
			ctx := context.Background()
			first, err := natsidem.Publish(ctx, js, subject+".a", "order-1", []byte("x"), natsidem.PublishOptions{})
			require.NoError(t, err)
			assert.False(t, first.Duplicate)
			again, err := natsidem.Publish(ctx, js, subject+".a", "order-1", []byte("x"), natsidem.PublishOptions{})
			require.NoError(t, err)
			assert.True(t, again.Duplicate)
			assert.Equal(t, first.Sequence, again.Sequence)

			for _, id := range []string{"", "a,b", "é", strings.Repeat("x", 253)} {
				_, err := natsidem.Publish(ctx, js, subject+".a", id, []byte("x"), natsidem.PublishOptions{})
				require.ErrorIs(t, err, natsidem.ErrInvalidMsgID, "%q", id)
			}
			s, err := js.Stream(ctx, first.Stream)
			require.NoError(t, err)
			info, err := s.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, uint64(1), info.State.Msgs)
		})
	}
}
