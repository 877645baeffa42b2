package server_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// counted returns work that counts its runs and answers result or err.
func counted(n *atomic.Int64, result string, err error) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		n.Add(1)
		if err != nil {
			return nil, err
		}
		return []byte(result), nil
	}
}

func TestRunOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	errWork := errors.New("work failed")
	type run struct {
		fp       string
		result   string
		err      error // work's error
		want     string
		replayed bool
		wantErr  error
		runs     int64
	}
	tests := []struct {
		name string
		runs []run
	}{
		{"first runs, repeat replays", []run{
			{fp: "a", result: "done", want: "done", runs: 1},
			{fp: "a", result: "again", want: "done", replayed: true, runs: 1},
		}},
		{"error releases", []run{
			{fp: "a", err: errWork, wantErr: errWork, runs: 1},
			{fp: "a", result: "done", want: "done", runs: 2},
			{fp: "a", want: "done", replayed: true, runs: 2},
		}},
		{"different fingerprint", []run{
			{fp: "a", result: "done", want: "done", runs: 1},
			{fp: "b", wantErr: server.ErrKeyReused, runs: 1},
		}},
		{"empty result", []run{
			{fp: "a", want: "", runs: 1},
			{fp: "a", want: "", replayed: true, runs: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newMemstore()
			k := server.Key{Scope: "queue", Key: newKey()}
			var n atomic.Int64
			for i, r := range tt.runs {
				got, replayed, err := server.RunOnce(ctx, store, k, r.fp, counted(&n, r.result, r.err), server.RunOptions{})
				if r.wantErr != nil {
					require.ErrorIs(t, err, r.wantErr, "run %d", i+1)
				} else {
					require.NoError(t, err, "run %d", i+1)
					assert.Equal(t, r.want, string(got), "run %d", i+1)
					assert.Equal(t, r.replayed, replayed, "run %d", i+1)
				}
				assert.Equal(t, r.runs, n.Load(), "work runs after run %d", i+1)
			}
		})
	}
}

// TestRunOnceCopiesResults: the caller may reuse or change the slices it
// hands over and gets back; the recorded result does not change.
func TestRunOnceCopiesResults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemstore()
	k := server.Key{Scope: "queue", Key: newKey()}
	buf := []byte("done")
	got, _, err := server.RunOnce(ctx, store, k, "a", func(context.Context) ([]byte, error) { return buf, nil }, server.RunOptions{})
	require.NoError(t, err)
	copy(buf, "XXXX") // the caller reuses its buffer
	copy(got, "YYYY")
	again, replayed, err := server.RunOnce(ctx, store, k, "a", nil, server.RunOptions{})
	require.NoError(t, err)
	require.True(t, replayed)
	assert.Equal(t, "done", string(again))
	copy(again, "ZZZZ")
	again, _, err = server.RunOnce(ctx, store, k, "a", nil, server.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, "done", string(again))
}

func TestRunOncePanicReleases(t *testing.T) {
	t.Parallel()
	store := newMemstore()
	k := server.Key{Key: newKey()}
	assert.PanicsWithValue(t, "boom", func() {
		server.RunOnce(context.Background(), store, k, "fp", func(context.Context) ([]byte, error) { panic("boom") }, server.RunOptions{})
	})
	got, replayed, err := server.RunOnce(context.Background(), store, k, "fp",
		func(context.Context) ([]byte, error) { return []byte("ok"), nil }, server.RunOptions{})
	require.NoError(t, err)
	assert.False(t, replayed)
	assert.Equal(t, "ok", string(got))
}

func TestRunOnceInFlight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		wait    time.Duration
		wantErr error
	}{
		{"no wait", 0, server.ErrInFlight},
		{"wait replays", 5 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newMemstore()
			k := server.Key{Key: newKey()}
			started, finish := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, _, err := server.RunOnce(context.Background(), store, k, "fp", func(context.Context) ([]byte, error) {
					close(started)
					<-finish
					return []byte("first"), nil
				}, server.RunOptions{})
				done <- err
			}()
			<-started
			time.AfterFunc(30*time.Millisecond, func() { close(finish) })
			var n atomic.Int64
			got, replayed, err := server.RunOnce(context.Background(), store, k, "fp", counted(&n, "second", nil), server.RunOptions{Wait: tt.wait})
			require.NoError(t, <-done)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, replayed)
			assert.Equal(t, "first", string(got))
			assert.Zero(t, n.Load())
		})
	}
}

func TestRunOnceLeaseLost(t *testing.T) {
	t.Parallel()
	store := &flakyStore{Store: newMemstore()}
	store.failRenew.Store(true)
	k := server.Key{Key: newKey()}
	opts := server.RunOptions{Lease: shortLease}
	cause := make(chan error, 1)
	started, taken := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := server.RunOnce(context.Background(), store, k, "fp", func(ctx context.Context) ([]byte, error) {
			close(started)
			<-taken
			store.failRenew.Store(false)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		}, opts)
		done <- err
	}()
	<-started
	var got []byte
	require.Eventually(t, func() bool {
		var err error
		got, _, err = server.RunOnce(context.Background(), store, k, "fp",
			func(context.Context) ([]byte, error) { return []byte("second"), nil }, opts)
		return err == nil
	}, 5*time.Second, shortLease/4)
	assert.Equal(t, "second", string(got))
	close(taken)
	assert.ErrorIs(t, <-cause, server.ErrLeaseLost)
	err := <-done
	assert.ErrorIs(t, err, server.ErrLeaseLost)
	assert.ErrorIs(t, err, context.Canceled)
	got, replayed, err := server.RunOnce(context.Background(), store, k, "fp", nil, opts)
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, "second", string(got))
}

func TestRunOnceTransactor(t *testing.T) {
	t.Parallel()
	store := &txStore{Store: newMemstore()}
	k := server.Key{Key: newKey()}
	var sawTx bool
	got, _, err := server.RunOnce(context.Background(), store, k, "fp", func(ctx context.Context) ([]byte, error) {
		sawTx = ctx.Value(txKey{}) == "tx"
		return []byte("ok"), nil
	}, server.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(got))
	assert.True(t, sawTx)
	assert.Equal(t, int64(1), store.commits.Load())

	_, _, err = server.RunOnce(context.Background(), store, server.Key{Key: newKey()}, "fp",
		func(context.Context) ([]byte, error) { return nil, errors.New("no") }, server.RunOptions{})
	require.Error(t, err)
	assert.Equal(t, int64(1), store.rollbacks.Load())
}

func TestRunOnceStoreFailure(t *testing.T) {
	t.Parallel()
	store := &brokenStore{Store: newMemstore()}
	store.claim.Store(true)
	_, _, err := server.RunOnce(context.Background(), store, server.Key{Key: newKey()}, "fp", nil, server.RunOptions{})
	require.ErrorIs(t, err, errSecret)
}

// TestRunOnceRenewalKeepsKey runs work for four leases (on a fake clock)
// while other deliveries keep arriving every quarter lease: renewal keeps
// the key, so none takes it over.
func TestRunOnceRenewalKeepsKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		k := server.Key{Key: "renewed-1"}
		opts := server.RunOptions{Lease: time.Second}
		done := make(chan error, 1)
		go func() {
			_, _, err := server.RunOnce(context.Background(), fs, k, "fp", func(context.Context) ([]byte, error) {
				time.Sleep(4 * opts.Lease)
				return []byte("first"), nil
			}, opts)
			done <- err
		}()
		var n atomic.Int64
		for range 15 {
			time.Sleep(opts.Lease / 4)
			_, _, err := server.RunOnce(context.Background(), fs, k, "fp", counted(&n, "second", nil), opts)
			require.ErrorIs(t, err, server.ErrInFlight)
		}
		require.NoError(t, <-done)
		assert.Zero(t, n.Load(), "no delivery took the key over")
	})
}
