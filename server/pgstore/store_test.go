package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

const (
	lease     = 30 * time.Second
	retention = time.Hour
	// lapsed is a lease or retention that ends before it starts: the
	// database's clock decides, so no test sleeps for expiry.
	lapsed = -time.Second
)

func TestNewValidatesTable(t *testing.T) {
	t.Parallel()
	pool := newPool(t, poolConfig(t, 1))
	cases := []struct {
		name  string
		table string
		ok    bool
	}{
		{"default", "", true},
		{"plain", "idem_keys", true},
		{"schema qualified", "billing.idem_keys", true},
		{"digits after first", "keys2", true},
		{"uppercase", "Idem", false},
		{"leading digit", "2keys", false},
		{"quote", `idem"keys`, false},
		{"injection", "idem; DROP TABLE x", false},
		{"empty part", "billing.", false},
		{"two qualifiers", "a.b.c", false},
		{"too long", "a23456789012345678901234567890123456789012345678901", false},
		{"longest", "a2345678901234567890123456789012345678901234567", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := pgstore.New(pool, pgstore.Options{Table: tc.table})
			if tc.ok {
				require.NoError(t, err)
				require.NotNil(t, s)
			} else {
				require.Error(t, err)
			}
		})
	}
	_, err := pgstore.New(nil, pgstore.Options{})
	require.Error(t, err)
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t, poolConfig(t, 8))
	table := "public." + tableName()
	dropTable(t, pool, table)
	s, err := pgstore.New(pool, pgstore.Options{Table: table})
	require.NoError(t, err)

	// The same table, spelled with and without its schema: one lock.
	bare, err := pgstore.New(pool, pgstore.Options{Table: strings.TrimPrefix(table, "public.")})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		store := []*pgstore.Store{s, bare}[i%2]
		wg.Go(func() { errs[i] = store.Migrate(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Migrate(ctx))

	c, err := s.Claim(ctx, server.Key{Scope: "s", Key: "k"}, "fp", lease)
	require.NoError(t, err)
	require.True(t, c.Acquired)
}

func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := server.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}},
		Body:   []byte(`{"id":"ch_1"}`),
	}
	cases := []struct {
		name string
		// setup brings key k into the state under test and returns the
		// first owner's token, if any.
		setup         func(t *testing.T, s *pgstore.Store, k server.Key) string
		fingerprint   string
		acquired      bool
		takenOver     bool
		completed     bool
		recordPrint   string
		firstLeaseOK  bool // whether the first owner may still Complete
		wantLeaseLeft bool // running record reports a lease in the future
	}{
		{
			name:         "new key",
			setup:        func(*testing.T, *pgstore.Store, server.Key) string { return "" },
			fingerprint:  "fp",
			acquired:     true,
			firstLeaseOK: true,
		},
		{
			name:          "in flight, same fingerprint",
			setup:         claimWith("fp", lease),
			fingerprint:   "fp",
			recordPrint:   "fp",
			firstLeaseOK:  true,
			wantLeaseLeft: true,
		},
		{
			name:          "in flight, other fingerprint",
			setup:         claimWith("fp", lease),
			fingerprint:   "other",
			recordPrint:   "fp",
			firstLeaseOK:  true,
			wantLeaseLeft: true,
		},
		{
			name:        "completed, same fingerprint",
			setup:       completeWith("fp", stored, retention),
			fingerprint: "fp",
			completed:   true,
			recordPrint: "fp",
		},
		{
			name:        "completed, other fingerprint",
			setup:       completeWith("fp", stored, retention),
			fingerprint: "other",
			completed:   true,
			recordPrint: "fp",
		},
		{
			name:        "lapsed lease, same fingerprint",
			setup:       claimWith("fp", lapsed),
			fingerprint: "fp",
			acquired:    true,
			takenOver:   true,
		},
		{
			name:         "lapsed lease, other fingerprint",
			setup:        claimWith("fp", lapsed),
			fingerprint:  "other",
			recordPrint:  "fp",
			firstLeaseOK: true,
		},
		{
			name:        "completed past retention, other fingerprint",
			setup:       completeWith("fp", stored, lapsed),
			fingerprint: "other",
			acquired:    true,
		},
		{
			name:        "released",
			setup:       releaseWith("fp"),
			fingerprint: "other",
			acquired:    true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newTestStore(t, pgstore.Options{})
			k := server.Key{Scope: "tenant", Key: "key-1"}
			first := tc.setup(t, s, k)

			c, err := s.Claim(ctx, k, tc.fingerprint, lease)
			require.NoError(t, err)
			assert.Equal(t, tc.acquired, c.Acquired, "acquired")
			assert.Equal(t, tc.takenOver, c.TakenOver, "taken over")
			if tc.acquired {
				require.NotEmpty(t, c.Token)
				assert.NotEqual(t, first, c.Token)
				assert.Equal(t, server.Record{}, c.Record)
				require.NoError(t, s.Complete(ctx, k, c.Token, stored, retention))
			} else {
				assert.Empty(t, c.Token)
				assert.Equal(t, tc.recordPrint, c.Record.Fingerprint)
				assert.Equal(t, tc.completed, c.Record.Completed)
				assert.False(t, c.Record.ExpiresAt.IsZero())
				if tc.completed {
					assert.Equal(t, stored, c.Record.Response)
					assert.True(t, c.Record.LeaseExpires.IsZero())
					assert.WithinDuration(t, time.Now().Add(retention), c.Record.ExpiresAt, time.Minute)
				} else {
					assert.Equal(t, server.StoredResponse{}, c.Record.Response)
					assert.Equal(t, c.Record.ExpiresAt, c.Record.LeaseExpires)
					assert.Equal(t, tc.wantLeaseLeft, time.Until(c.Record.LeaseExpires) > 0)
				}
			}
			if first != "" && !tc.completed {
				err := s.Complete(ctx, k, first, stored, retention)
				if tc.firstLeaseOK {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, server.ErrLeaseLost)
				}
			}
		})
	}
}

func claimWith(fingerprint string, d time.Duration) func(*testing.T, *pgstore.Store, server.Key) string {
	return func(t *testing.T, s *pgstore.Store, k server.Key) string {
		c, err := s.Claim(context.Background(), k, fingerprint, d)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		return c.Token
	}
}

func completeWith(fingerprint string, resp server.StoredResponse, keep time.Duration) func(*testing.T, *pgstore.Store, server.Key) string {
	return func(t *testing.T, s *pgstore.Store, k server.Key) string {
		token := claimWith(fingerprint, lease)(t, s, k)
		require.NoError(t, s.Complete(context.Background(), k, token, resp, keep))
		return token
	}
}

func releaseWith(fingerprint string) func(*testing.T, *pgstore.Store, server.Key) string {
	return func(t *testing.T, s *pgstore.Store, k server.Key) string {
		token := claimWith(fingerprint, lease)(t, s, k)
		require.NoError(t, s.Release(context.Background(), k, token))
		return ""
	}
}

func TestFencing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	k := server.Key{Scope: "tenant", Key: "fenced"}
	resp := server.StoredResponse{Status: http.StatusOK}

	c, err := s.Claim(ctx, k, "fp", lease)
	require.NoError(t, err)
	require.True(t, c.Acquired)

	require.ErrorIs(t, s.Renew(ctx, k, "wrong", lease), server.ErrLeaseLost)
	require.ErrorIs(t, s.Complete(ctx, k, "wrong", resp, retention), server.ErrLeaseLost)
	require.ErrorIs(t, s.Release(ctx, k, "wrong"), server.ErrLeaseLost)
	other := server.Key{Scope: "other tenant", Key: k.Key}
	require.ErrorIs(t, s.Complete(ctx, other, c.Token, resp, retention), server.ErrLeaseLost)

	// Renewing a lapsed lease that nobody took over keeps it.
	require.NoError(t, s.Renew(ctx, k, c.Token, lapsed))
	require.NoError(t, s.Renew(ctx, k, c.Token, lease))
	again, err := s.Claim(ctx, k, "fp", lease)
	require.NoError(t, err)
	require.False(t, again.Acquired, "a renewed lease is not taken over")

	require.NoError(t, s.Complete(ctx, k, c.Token, resp, retention))
	// Completed: the lease is over for every operation.
	require.ErrorIs(t, s.Renew(ctx, k, c.Token, lease), server.ErrLeaseLost)
	require.ErrorIs(t, s.Release(ctx, k, c.Token), server.ErrLeaseLost)
	require.ErrorIs(t, s.Complete(ctx, k, c.Token, resp, retention), server.ErrLeaseLost)
}

func TestTakeoverFencesFormerOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	k := server.Key{Scope: "tenant", Key: "takeover"}

	first, err := s.Claim(ctx, k, "fp", lapsed)
	require.NoError(t, err)
	second, err := s.Claim(ctx, k, "fp", lease)
	require.NoError(t, err)
	require.True(t, second.Acquired)
	require.True(t, second.TakenOver)

	require.ErrorIs(t, s.Renew(ctx, k, first.Token, lease), server.ErrLeaseLost)
	require.ErrorIs(t, s.Complete(ctx, k, first.Token, server.StoredResponse{Status: 200}, retention), server.ErrLeaseLost)
	require.ErrorIs(t, s.Release(ctx, k, first.Token), server.ErrLeaseLost)
	require.NoError(t, s.Complete(ctx, k, second.Token, server.StoredResponse{Status: 201}, retention))

	c, err := s.Claim(ctx, k, "fp", lease)
	require.NoError(t, err)
	require.True(t, c.Record.Completed)
	require.Equal(t, 201, c.Record.Response.Status)
}

func TestResponseRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	cases := []struct {
		name string
		resp server.StoredResponse
	}{
		{"nil header and body", server.StoredResponse{Status: http.StatusNoContent}},
		{"empty header and body", server.StoredResponse{Status: http.StatusOK, Header: http.Header{}, Body: []byte{}}},
		{"binary body", server.StoredResponse{Status: http.StatusOK, Body: []byte{0, 1, 2, 0xff, '\\', '\''}}},
		{"unicode header", server.StoredResponse{Status: http.StatusConflict, Header: http.Header{"X-Note": {"héllo \"quoted\""}}}},
		{"header bytes that are not text", server.StoredResponse{Status: http.StatusOK, Header: http.Header{
			"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""}, "X-Odd": {"a\x00b"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := server.Key{Scope: "tenant", Key: tc.name}
			c, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, k, c.Token, tc.resp, retention))
			replay, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.True(t, replay.Record.Completed)
			require.Equal(t, tc.resp, replay.Record.Response)
		})
	}
}

func TestScopesAreSeparate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	for _, scope := range []string{"a", "b", "A", ""} {
		c, err := s.Claim(ctx, server.Key{Scope: scope, Key: "same"}, "fp", lease)
		require.NoError(t, err)
		require.True(t, c.Acquired, "scope %q", scope)
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, pgstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := server.Key{Scope: "tenant", Key: "cancelled"}
	_, err := s.Claim(ctx, k, "fp", lease)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, s.Complete(ctx, k, "t", server.StoredResponse{}, retention), context.Canceled)
	_, err = s.Purge(ctx, 10)
	require.ErrorIs(t, err, context.Canceled)
}

// TestErrorsAreTranslated: a database failure reaches the caller as a
// pgstore error, not as a pgx type and not as a lost lease.
func TestErrorsAreTranslated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	table := tableName()
	s, pool := newTestStore(t, pgstore.Options{Table: table})
	_, err := pool.Exec(ctx, "DROP TABLE "+table)
	require.NoError(t, err)
	k := server.Key{Scope: "tenant", Key: "gone"}

	_, claimErr := s.Claim(ctx, k, "fp", lease)
	_, purgeErr := s.Purge(ctx, 0)
	_, _, beginErr := s.BeginWork(ctx, k, "token") // not transactional: no database involved
	require.NoError(t, beginErr)
	for name, err := range map[string]error{
		"claim":    claimErr,
		"renew":    s.Renew(ctx, k, "token", lease),
		"complete": s.Complete(ctx, k, "token", server.StoredResponse{Status: 200}, retention),
		"release":  s.Release(ctx, k, "token"),
		"purge":    purgeErr,
	} {
		require.Error(t, err, name)
		var pgErr *pgconn.PgError
		require.False(t, errors.As(err, &pgErr), "%s: %v exposes a pgx error", name, err)
		require.NotErrorIs(t, err, server.ErrLeaseLost, name)
		require.NotErrorIs(t, err, context.Canceled, name)
	}
}

// TestScopeNotText: a scope PostgreSQL text cannot hold fails the claim
// with an error and leaves the connection usable.
func TestScopeNotText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	for _, scope := range []string{"caf\xe9", "a\x00b"} {
		_, err := s.Claim(ctx, server.Key{Scope: scope, Key: "k"}, "fp", lease)
		require.Error(t, err, "%q", scope)
		require.NotErrorIs(t, err, server.ErrLeaseLost)
	}
	c, err := s.Claim(ctx, server.Key{Scope: "café", Key: "k"}, "fp", lease)
	require.NoError(t, err)
	require.True(t, c.Acquired)
}
