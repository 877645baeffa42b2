package server_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

type charge struct {
	ID     string    `json:"id"`
	Amount int64     `json:"amount"`
	Tags   []string  `json:"tags"`
	At     time.Time `json:"at"`
	Rate   float64   `json:"rate"`
}

// TestRunOnceValue: a typed result round-trips through the store, and a
// repeat returns the recorded value without running the work.
func TestRunOnceValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counting := countingCodec{enc: new(atomic.Int64), dec: new(atomic.Int64)}
	want := charge{ID: "ch_1", Amount: 4200, Tags: []string{"a", "b"}, At: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Rate: 0.25}
	tests := []struct {
		name  string
		codec server.Codec[charge]
	}{
		{"json", server.JSONCodec[charge]{}},
		{"nil is json", nil},
		{"custom", counting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newMemstore()
			k := server.Key{Scope: "queue", Key: newKey()}
			runs := 0
			work := func(context.Context) (charge, error) { runs++; return want, nil }
			got, replayed, err := server.RunOnceCodec(ctx, store, k, "fp", tt.codec, work, server.RunOptions{})
			require.NoError(t, err)
			assert.False(t, replayed)
			assert.Equal(t, want, got)
			for range 2 {
				got, replayed, err = server.RunOnceCodec(ctx, store, k, "fp", tt.codec, work, server.RunOptions{})
				require.NoError(t, err)
				assert.True(t, replayed)
				assert.Equal(t, want, got)
			}
			assert.Equal(t, 1, runs, "replays do not run the work")
		})
	}
	t.Cleanup(func() {
		assert.Equal(t, int64(1), counting.enc.Load(), "the custom codec encoded the result")
		assert.Equal(t, int64(2), counting.dec.Load(), "and decoded both replays")
	})
}

// countingCodec is JSON that counts its calls, to show the codec given is
// the one used.
type countingCodec struct{ enc, dec *atomic.Int64 }

func (c countingCodec) Encode(v charge) ([]byte, error) {
	c.enc.Add(1)
	return server.JSONCodec[charge]{}.Encode(v)
}

func (c countingCodec) Decode(b []byte) (charge, error) {
	c.dec.Add(1)
	return server.JSONCodec[charge]{}.Decode(b)
}

// failCodec fails to encode or to decode.
type failCodec struct{ enc, dec error }

func (c failCodec) Encode(v int) ([]byte, error) {
	if c.enc != nil {
		return nil, c.enc
	}
	return fmt.Appendf(nil, "%d", v), nil
}

func (c failCodec) Decode(b []byte) (int, error) {
	if c.dec != nil {
		return 0, c.dec
	}
	var v int
	_, err := fmt.Sscanf(string(b), "%d", &v)
	return v, err
}

// TestRunOnceValueEncodeError: a result with no encoding is a typed error,
// and the run is recorded all the same, so a redelivery does not repeat
// the work. The naive variant, which releases the key on the codec's
// failure as it would on the work's, runs the work again.
func TestRunOnceValueEncodeError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	errEnc := errors.New("cannot encode")

	t.Run("recorded as not kept", func(t *testing.T) {
		t.Parallel()
		store := newMemstore()
		k := server.Key{Scope: "queue", Key: newKey()}
		runs := 0
		work := func(context.Context) (int, error) { runs++; return 7, nil }
		got, replayed, err := server.RunOnceCodec(ctx, store, k, "fp", failCodec{enc: errEnc}, work, server.RunOptions{})
		var ce *server.CodecError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, server.CodecEncode, ce.Op)
		require.ErrorIs(t, err, errEnc)
		require.ErrorIs(t, err, server.ErrCodec)
		assert.False(t, replayed)
		assert.Equal(t, 7, got, "the work's own value comes back with the error")

		got, replayed, err = server.RunOnceCodec(ctx, store, k, "fp", failCodec{enc: errEnc}, work, server.RunOptions{})
		require.ErrorIs(t, err, server.ErrResultNotKept)
		assert.True(t, replayed)
		assert.Zero(t, got)
		assert.Equal(t, 1, runs, "the work ran once")
	})

	t.Run("json: NaN", func(t *testing.T) {
		t.Parallel()
		store := newMemstore()
		k := server.Key{Scope: "queue", Key: newKey()}
		_, _, err := server.RunOnceValue(ctx, store, k, "fp", func(context.Context) (float64, error) { return math.NaN(), nil }, server.RunOptions{})
		var ce *server.CodecError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, server.CodecEncode, ce.Op)
	})

	t.Run("naive: release on encode failure", func(t *testing.T) {
		t.Parallel()
		store := newMemstore()
		k := server.Key{Scope: "queue", Key: newKey()}
		runs := 0
		naive := func() error {
			_, _, err := server.RunOnce(ctx, store, k, "fp", func(context.Context) ([]byte, error) {
				runs++
				b, err := failCodec{enc: errEnc}.Encode(7)
				return b, err // the codec's error releases the key
			}, server.RunOptions{})
			return err
		}
		require.ErrorIs(t, naive(), errEnc)
		require.ErrorIs(t, naive(), errEnc)
		assert.Equal(t, 2, runs, "the naive variant repeats the work")
	})
}

// TestRunOnceValueDecodeError: a recorded result the codec cannot decode
// is a typed error on the replay, and the work does not run again; so is
// a key recorded by the untyped RunOnce.
func TestRunOnceValueDecodeError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	errDec := errors.New("cannot decode")
	store := newMemstore()

	k := server.Key{Scope: "queue", Key: newKey()}
	runs := 0
	work := func(context.Context) (int, error) { runs++; return 7, nil }
	_, _, err := server.RunOnceCodec(ctx, store, k, "fp", failCodec{}, work, server.RunOptions{})
	require.NoError(t, err)
	got, replayed, err := server.RunOnceCodec(ctx, store, k, "fp", failCodec{dec: errDec}, work, server.RunOptions{})
	var ce *server.CodecError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, server.CodecDecode, ce.Op)
	require.ErrorIs(t, err, errDec)
	assert.True(t, replayed)
	assert.Zero(t, got)
	assert.Equal(t, 1, runs)

	untyped := server.Key{Scope: "queue", Key: newKey()}
	_, _, err = server.RunOnce(ctx, store, untyped, "fp", func(context.Context) ([]byte, error) { return []byte("7"), nil }, server.RunOptions{})
	require.NoError(t, err)
	_, replayed, err = server.RunOnceValue(ctx, store, untyped, "fp", work, server.RunOptions{})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, server.CodecDecode, ce.Op)
	assert.True(t, replayed)
	assert.Equal(t, 1, runs)
}

// TestRunOnceValueErrors: the work's error releases the key and comes back
// as it is; RunOnce's own refusals come back with T's zero value.
func TestRunOnceValueErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemstore()
	k := server.Key{Scope: "queue", Key: newKey()}
	errWork := errors.New("work failed")
	runs := 0
	fail := func(context.Context) (charge, error) { runs++; return charge{ID: "partial"}, errWork }
	got, replayed, err := server.RunOnceValue(ctx, store, k, "fp", fail, server.RunOptions{})
	require.ErrorIs(t, err, errWork)
	assert.False(t, replayed)
	assert.Zero(t, got)

	ok := func(context.Context) (charge, error) { runs++; return charge{ID: "ch_2"}, nil }
	got, _, err = server.RunOnceValue(ctx, store, k, "fp", ok, server.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ch_2", got.ID)
	assert.Equal(t, 2, runs, "the failed run released the key")

	got, replayed, err = server.RunOnceValue(ctx, store, k, "other", ok, server.RunOptions{})
	require.ErrorIs(t, err, server.ErrKeyReused)
	assert.False(t, replayed)
	assert.Zero(t, got)

	_, _, err = server.RunOnceValue(ctx, store, server.Key{Scope: "\xff", Key: "k"}, "fp", ok, server.RunOptions{})
	require.ErrorIs(t, err, server.ErrInvalidScope)
	assert.Equal(t, 2, runs)
}

// TestRunOnceValueOutlivesItsCaller: once the key is held, the caller's
// cancellation does not cancel the work; its result is recorded and the
// redelivery replays it.
func TestRunOnceValueOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	store := newMemstore()
	k := server.Key{Scope: "queue", Key: newKey()}
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	work := func(wctx context.Context) (charge, error) {
		runs++
		cancel() // the consumer gives up mid-work
		if err := wctx.Err(); err != nil {
			return charge{}, err
		}
		return charge{ID: "ch_3"}, nil
	}
	got, replayed, err := server.RunOnceValue(ctx, store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.False(t, replayed)
	assert.Equal(t, "ch_3", got.ID)
	got, replayed, err = server.RunOnceValue(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, "ch_3", got.ID)
	assert.Equal(t, 1, runs)
}

func ExampleRunOnceValue() {
	type Charge struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	store := memstore.New(memstore.Options{})
	charge := func(ctx context.Context) (Charge, error) {
		fmt.Println("charging card")
		return Charge{ID: "ch_1", Amount: 100}, nil
	}

	// A queue delivers the same message twice.
	for range 2 {
		k := server.Key{Scope: "payments", Key: "msg-42"}
		c, replayed, err := server.RunOnceValue(context.Background(), store, k, "charge:100:EUR", charge, server.RunOptions{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s %d (replayed: %v)\n", c.ID, c.Amount, replayed)
	}
	// Output:
	// charging card
	// ch_1 100 (replayed: false)
	// ch_1 100 (replayed: true)
}
