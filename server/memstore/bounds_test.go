package memstore_test

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// scoped is key i of scope.
func scoped(scope string, i int) server.Key {
	return server.Key{Scope: scope, Key: fmt.Sprint("k", i)}
}

// fill claims keys 0, 1, ... of scope until one is refused or n are
// taken, completes each with resp for retention unless running, and
// returns how many were taken and the error that stopped it (nil if n
// were taken).
func fill(t *testing.T, s *memstore.Store, scope string, n int, resp server.StoredResponse, retention time.Duration, running bool) (int, error) {
	t.Helper()
	for i := range n {
		k := scoped(scope, i)
		c, err := s.Claim(ctx, k, "fp", time.Minute)
		if err != nil {
			return i, err
		}
		require.True(t, c.Acquired, "key %v", k)
		if !running {
			require.NoError(t, s.Complete(ctx, k, c.Token, resp, retention))
		}
	}
	return n, nil
}

// requireKept checks that keys 0 to n-1 of scope are still held: running,
// or completed with their response.
func requireKept(t *testing.T, s *memstore.Store, scope string, n int, completed bool) {
	t.Helper()
	for i := range n {
		c := claim(t, s, scoped(scope, i), "fp")
		require.False(t, c.Acquired, "key %d of %q was forgotten", i, scope)
		require.Equal(t, completed, c.Record.Completed, "key %d of %q", i, scope)
	}
}

var ok = server.StoredResponse{Status: 200}

// TestFullRefusesNewKeys: a store full of records inside their retention,
// running or completed, refuses a new key with ErrFull and forgets none of
// them; the keys it holds are still answered.
func TestFullRefusesNewKeys(t *testing.T) {
	t.Parallel()
	for _, running := range []bool{false, true} {
		t.Run(fmt.Sprint("running=", running), func(t *testing.T) {
			t.Parallel()
			c := newClock()
			s := memstore.New(memstore.Options{MaxKeys: 10, Now: c.Now})
			n, err := fill(t, s, "", 10, ok, time.Hour, running)
			require.NoError(t, err)
			require.Equal(t, 10, n)
			c.Advance(59 * time.Second) // inside the lease, and the retention
			for i := 10; i < 20; i++ {
				_, err := s.Claim(ctx, scoped("", i), "fp", time.Minute)
				require.ErrorIs(t, err, memstore.ErrFull)
				require.NotErrorIs(t, err, memstore.ErrScopeFull, "the empty scope has the whole store")
			}
			requireKept(t, s, "", 10, !running)
			assert.Equal(t, 10, s.Len())
		})
	}
}

// TestExpiredRecordsMakeRoom: a full store admits new keys again as its
// records expire (completed ones after their retention, running ones
// Options.Abandon after their lease lapsed), forgetting only expired ones,
// the soonest expired first.
func TestExpiredRecordsMakeRoom(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 6, ScopeMaxKeys: 6, Now: c.Now, Abandon: time.Hour})
	complete := func(i int, retention time.Duration) {
		tok := claim(t, s, key(i), "fp").Token
		require.NoError(t, s.Complete(ctx, key(i), tok, ok, retention))
	}
	complete(0, 24*time.Hour)
	complete(1, time.Second)
	complete(2, time.Hour)
	complete(3, 2*time.Hour)
	claim(t, s, key(4), "fp") // running: lease 1 min, abandoned 1 h later
	complete(5, 3*time.Hour)
	calls := 0
	free := func() int { // how many new keys fit now
		t.Helper()
		calls++
		n, err := fill(t, s, fmt.Sprint("new", calls), 10, ok, 100*time.Hour, false)
		require.ErrorIs(t, err, memstore.ErrFull)
		return n
	}
	require.Zero(t, free(), "nothing has expired")

	c.Advance(time.Minute) // key 1 has expired
	require.Equal(t, 1, free())
	assert.True(t, claim(t, s, key(0), "fp").Record.Completed, "a day left: kept")
	assert.True(t, claim(t, s, key(2), "fp").Record.Completed, "an hour left: kept")

	c.Advance(time.Hour) // keys 2 (completed) and 4 (abandoned) have expired
	require.Equal(t, 2, free())
	c.Advance(time.Hour) // key 3 has expired
	require.Equal(t, 1, free())
	for _, i := range []int{0, 5} {
		assert.True(t, claim(t, s, key(i), "fp").Record.Completed, "key %d kept", i)
	}
}

// TestBytesCount: a record counts its claim and the reserve while
// running, and its claim and response once completed, a large body as its
// size; forgetting it takes everything back.
func TestBytesCount(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	k := server.Key{Scope: "acct", Key: "order-1"}
	c := claim(t, s, k, "fingerprint")
	running := s.Bytes()
	claimed := int64(memstore.RecordOverhead + len("acct") + len("order-1") + len("fingerprint"))
	assert.Equal(t, claimed+memstore.DefaultRunningReserve, running)

	body := make([]byte, 512<<10)
	h := http.Header{"Content-Type": {"application/json"}}
	require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 201, Header: h, Body: body}, time.Hour))
	added := s.Bytes() - claimed
	assert.GreaterOrEqual(t, added, int64(len(body)+len("Content-Type")+len("application/json")))
	assert.Less(t, added, int64(len(body)+1024))

	// The body's memory counts, not only its length.
	k2 := server.Key{Scope: "acct", Key: "order-2"}
	c = claim(t, s, k2, "fingerprint")
	before := s.Bytes()
	require.NoError(t, s.Complete(ctx, k2, c.Token, server.StoredResponse{Status: 201, Body: make([]byte, 10, 1<<20)}, time.Hour))
	assert.Equal(t, int64(1<<20-memstore.DefaultRunningReserve), s.Bytes()-before, "the response replaces the reserve")

	c = claim(t, s, server.Key{Scope: "acct", Key: "order-3"}, "fingerprint")
	require.NoError(t, s.Release(ctx, server.Key{Scope: "acct", Key: "order-3"}, c.Token))
	assert.Equal(t, before+1<<20-memstore.DefaultRunningReserve, s.Bytes(), "a released key takes its bytes back")
}

// TestRunningReserve: a running record counts Options.RunningReserve for
// its response, at most a sixteenth of the smaller byte bound, and its
// response replaces it on completion, even a smaller one.
func TestRunningReserve(t *testing.T) {
	t.Parallel()
	k := server.Key{Scope: "acct", Key: "order-1"}
	claimed := int64(memstore.RecordOverhead + len("acct") + len("order-1") + len("fp"))
	tests := []struct {
		name    string
		opts    memstore.Options
		reserve int64
	}{
		{"default", memstore.Options{}, memstore.DefaultRunningReserve},
		{"set", memstore.Options{RunningReserve: 64 << 10}, 64 << 10},
		{"a sixteenth of the share", memstore.Options{RunningReserve: 64 << 10, ScopeMaxBytes: 160 << 10}, 10 << 10},
		{"a sixteenth of the store", memstore.Options{MaxBytes: 32 << 10, ScopeMaxBytes: 1 << 20}, 2 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := memstore.New(tt.opts)
			c := claim(t, s, k, "fp")
			assert.Equal(t, claimed+tt.reserve, s.Bytes())
			require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 204}, time.Hour))
			assert.Equal(t, claimed, s.Bytes(), "an empty response replaces the reserve")
		})
	}
}

// TestByteBound: a scope of 512 KB bodies is refused long before MaxKeys,
// by its byte share, and the store as a whole by MaxBytes; an outcome that
// takes the store over MaxBytes is stored all the same.
func TestByteBound(t *testing.T) {
	t.Parallel()
	big := server.StoredResponse{Status: 201, Body: bytes.Repeat([]byte("x"), 512<<10)}
	s := memstore.New(memstore.Options{MaxBytes: 4 << 20}) // scope share 1 MiB
	n, err := fill(t, s, "big", 1000, big, time.Hour, false)
	require.ErrorIs(t, err, memstore.ErrScopeFull)
	assert.Equal(t, 2, n, "two 512 KB bodies fill a 1 MiB share")
	assert.Greater(t, s.Bytes(), int64(1<<20))

	// Other scopes still have room; together they fill MaxBytes.
	total := n
	for i := range 8 {
		n, err := fill(t, s, fmt.Sprint("other", i), 1000, big, time.Hour, false)
		require.ErrorIs(t, err, memstore.ErrFull)
		total += n
	}
	assert.Equal(t, 8, total, "4 MiB hold eight 512 KB bodies")
	assert.LessOrEqual(t, s.Bytes(), int64(4<<20+len(big.Body)), "over by at most the last response")

	// Keys claimed while there was room complete over the bound, and are
	// kept; new keys are refused.
	s = memstore.New(memstore.Options{MaxBytes: 1 << 20, ScopeMaxBytes: 1 << 20})
	var tokens []string
	for i := range 4 {
		tokens = append(tokens, claim(t, s, key(i), "fp").Token)
	}
	for i, tok := range tokens {
		require.NoError(t, s.Complete(ctx, key(i), tok, big, time.Hour), "an outcome is never lost")
	}
	assert.Greater(t, s.Bytes(), int64(2<<20))
	_, err = s.Claim(ctx, key(4), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrFull)
	requireKept(t, s, "s", 4, true)
}

// TestFairShare: scopes that flood the store cannot take another scope's
// share, of keys or of bytes: after up to three other scopes filled
// theirs, scope A still gets its whole share.
func TestFairShare(t *testing.T) {
	t.Parallel()
	body := server.StoredResponse{Status: 201, Body: make([]byte, 10_000)}
	tests := []struct {
		name   string
		opts   memstore.Options
		resp   server.StoredResponse
		floods int
		share  int // keys A can take
	}{
		{"keys, one flood", memstore.Options{MaxKeys: 100}, ok, 1, 25},
		{"keys, three floods", memstore.Options{MaxKeys: 100}, ok, 3, 25},
		{"keys, set share", memstore.Options{MaxKeys: 100, ScopeMaxKeys: 10}, ok, 9, 10},
		{"bytes, two floods", memstore.Options{MaxBytes: 400_000}, body, 2, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := memstore.New(tt.opts)
			for f := range tt.floods {
				n, err := fill(t, s, fmt.Sprint("flood", f), 200_000, tt.resp, time.Hour, false)
				require.ErrorIs(t, err, memstore.ErrScopeFull)
				assert.Equal(t, tt.share, n)
			}
			n, err := fill(t, s, "A", 200_000, tt.resp, time.Hour, false)
			require.ErrorIs(t, err, memstore.ErrScopeFull, "A is refused by its share, not by the floods")
			assert.Equal(t, tt.share, n)
			requireKept(t, s, "A", n, true)
		})
	}
}

// TestEmptyScopeHasWholeStore: a single-tenant store (scope "") may use
// every key and byte.
func TestEmptyScopeHasWholeStore(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{MaxKeys: 100})
	n, err := fill(t, s, "", 1000, ok, time.Hour, false)
	require.ErrorIs(t, err, memstore.ErrFull)
	assert.Equal(t, 100, n)
}

// TestScopeShareComesBack: a scope at its share admits new keys again as
// its own records expire, even when other scopes' expired records are
// ahead of them.
func TestScopeShareComesBack(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 1000, ScopeMaxKeys: 10, Now: c.Now})
	for f := range 50 {
		_, err := fill(t, s, fmt.Sprint("other", f), 10, ok, time.Minute, false)
		require.NoError(t, err)
	}
	_, err := fill(t, s, "A", 10, ok, 2*time.Minute, false)
	require.NoError(t, err)
	_, err = s.Claim(ctx, scoped("A", 10), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrScopeFull)
	c.Advance(2 * time.Minute) // 500 other records expire first, then A's
	require.True(t, claim(t, s, scoped("A", 10), "fp").Acquired)
	// The claim forgets 64 of the others' expired records in passing, then
	// one of A's to fit its share, behind the 436 others still held.
	assert.Equal(t, 510-64-1+1, s.Len())
	_, err = fill(t, s, "A", 9, ok, time.Hour, false) // with key 10, its share
	require.NoError(t, err, "A's expired records make room in its share")
}

// TestScopeFullClaimSparesOthers: a claim refused by its scope's share
// forgets no more than its passing sweep of the other scopes' expired
// records, since none of them can make room in the share: a refused claim
// does not stall the store by forgetting all of them under its lock.
func TestScopeFullClaimSparesOthers(t *testing.T) {
	t.Parallel()
	others := 100_000
	if testing.Short() {
		others = 10_000
	}
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: others + 1000, ScopeMaxKeys: 10, Now: c.Now})
	_, err := fill(t, s, "A", 10, ok, 48*time.Hour, false)
	require.NoError(t, err)
	for i := range others {
		k := server.Key{Scope: fmt.Sprint("o", i%10_000), Key: fmt.Sprint(i)}
		tok := claim(t, s, k, "fp").Token
		require.NoError(t, s.Complete(ctx, k, tok, ok, time.Minute))
	}
	c.Advance(time.Hour)
	before := s.Len()
	_, err = s.Claim(ctx, scoped("A", 10), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrScopeFull)
	assert.LessOrEqual(t, before-s.Len(), 64, "forgot the others' expired records")
	assert.Positive(t, before-s.Len(), "the passing sweep still runs")
}

// TestOvershootLeavesOthersRoom: a scope whose running keys all complete
// with responses far larger than the reserve takes the store over MaxBytes;
// its outcomes are all kept and its new keys refused, but it counts no
// more than its share against the store's bound, so every other scope
// still gets its whole share, and the store is over MaxBytes by no more
// than the responses' excess over the reserve.
func TestOvershootLeavesOthersRoom(t *testing.T) {
	t.Parallel()
	const maxBytes = 1 << 20 // a share of 256 KiB
	big := server.StoredResponse{Status: 200, Body: make([]byte, 32<<10)}
	s := memstore.New(memstore.Options{MaxBytes: maxBytes})
	var tokens []string
	for i := range 1000 {
		c, err := s.Claim(ctx, scoped("A", i), "fp", time.Minute)
		if err != nil {
			require.ErrorIs(t, err, memstore.ErrScopeFull, "running keys count the reserve")
			break
		}
		tokens = append(tokens, c.Token)
	}
	n := len(tokens)
	require.Less(t, n, 1000, "A's running keys were never refused")
	for i, tok := range tokens {
		require.NoError(t, s.Complete(ctx, scoped("A", i), tok, big, 24*time.Hour), "an outcome is never lost")
	}
	requireKept(t, s, "A", n, true)
	excess := int64(n) * (int64(len(big.Body)) - memstore.DefaultRunningReserve)
	assert.Greater(t, s.Bytes(), int64(maxBytes), "A's outcomes took the store over MaxBytes")
	assert.LessOrEqual(t, s.Bytes(), maxBytes+excess)
	_, err := s.Claim(ctx, scoped("A", n), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrScopeFull)

	// Each of three other scopes gets the share it would get in an empty
	// store; together with A's share they fill the store.
	want, err := fill(t, memstore.New(memstore.Options{MaxBytes: maxBytes}), "B", 100_000, ok, time.Hour, false)
	require.ErrorIs(t, err, memstore.ErrScopeFull)
	for _, scope := range []string{"B", "C", "D"} {
		got, err := fill(t, s, scope, 100_000, ok, time.Hour, false)
		require.ErrorIs(t, err, memstore.ErrScopeFull, "scope %s is refused by its share, not by A", scope)
		assert.Equal(t, want, got, "scope %s", scope)
	}
	_, err = fill(t, s, "E", 100_000, ok, time.Hour, false)
	require.ErrorIs(t, err, memstore.ErrFull)
	assert.LessOrEqual(t, s.Bytes(), maxBytes+excess)
}

// TestSmallStoreShares: however small MaxBytes, a named scope's default
// share holds running keys: a quarter of MaxBytes, but at least 64 KiB or
// the whole store.
func TestSmallStoreShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		maxBytes int64
		least    int // running keys a scope gets in an empty store, at least
	}{
		{1000, 3},
		{4 << 10, 7},
		{64 << 10, 15},
		{256 << 10, 15},
		{1 << 20, 59},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxBytes), func(t *testing.T) {
			t.Parallel()
			s := memstore.New(memstore.Options{MaxBytes: tt.maxBytes})
			n, err := fill(t, s, "A", 100_000, ok, time.Hour, true)
			require.ErrorIs(t, err, memstore.ErrScopeFull)
			assert.GreaterOrEqual(t, n, tt.least)
			assert.LessOrEqual(t, s.Bytes(), max(tt.maxBytes/4, min(tt.maxBytes, 64<<10)), "the share")
		})
	}
}

// TestBytesCoverHeap: what records count is not less than the heap they
// hold, for small typical responses, so MaxBytes bounds memory.
func TestBytesCoverHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const n = 50_000
	keys := make([]server.Key, n)
	for i := range keys {
		keys[i] = server.Key{Scope: fmt.Sprint("acct_", i%100), Key: fmt.Sprint("0190a3b2-7c41-7def-8a9b-", 100000000000+i)}
	}
	fp := "4bf5122f344554c53bde2ebb8cd2b7e3d1600ad631c385a5d7cce23c7785459a"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := memstore.New(memstore.Options{MaxKeys: n, MaxBytes: 1 << 40, ScopeMaxKeys: n, ScopeMaxBytes: 1 << 40})
	for i, k := range keys {
		c, err := s.Claim(ctx, k, fp, time.Minute)
		require.NoError(t, err)
		// As the middleware records it: a header map, a buffered body.
		h := make(http.Header, 4)
		h.Set("Content-Type", "application/json")
		var body bytes.Buffer
		fmt.Fprintf(&body, `{"id":"ch_%d","status":"succeeded"}`, i)
		require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 201, Header: h, Body: body.Bytes()}, time.Hour))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d records hold %d bytes of heap and count %d", n, held, s.Bytes())
	assert.GreaterOrEqual(t, s.Bytes(), held*9/10)
	runtime.KeepAlive(s)
}

// TestCenturiesOfRetention: a record kept for centuries, past the range of
// Unix nanoseconds, does not stop expired records from being reclaimed.
func TestCenturiesOfRetention(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 2, ScopeMaxKeys: 2, Now: c.Now})
	tok := claim(t, s, key(0), "fp").Token
	require.NoError(t, s.Complete(ctx, key(0), tok, ok, 290*365*24*time.Hour))
	tok = claim(t, s, key(1), "fp").Token
	require.NoError(t, s.Complete(ctx, key(1), tok, ok, time.Minute))
	c.Advance(time.Hour)
	require.True(t, claim(t, s, key(2), "fp").Acquired, "key 1 expired and made room")
	assert.True(t, claim(t, s, key(0), "fp").Record.Completed)
}
