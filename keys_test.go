// This file tests minting, deriving, validating and parsing keys.

package idem

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/idemhq/idem/internal/key"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewKeyIsUUIDv7(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	for range 1000 {
		k := NewKey()
		u, err := uuid.Parse(k)
		require.NoError(t, err)
		assert.Equal(t, uuid.Version(7), u.Version())
		assert.Equal(t, uuid.RFC4122, u.Variant())
		assert.False(t, seen[k], "duplicate key %s", k)
		seen[k] = true
	}
}

func TestNewULIDIsMonotonic(t *testing.T) {
	t.Parallel()
	prev := NewULID()
	for range 10000 {
		k := NewULID()
		require.Len(t, k, 26)
		require.Greater(t, k, prev, "ULIDs from one process must increase")
		prev = k
	}
}

func TestDeriveKey(t *testing.T) {
	t.Parallel()
	a := DeriveKey("payout", "2026-12-25", "417")
	assert.Equal(t, a, DeriveKey("payout", "2026-12-25", "417"), "deterministic")
	u, err := uuid.Parse(a)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(8), u.Version())
	assert.Equal(t, uuid.RFC4122, u.Variant())
	require.NoError(t, ValidateKey(a))

	distinct := map[string][]string{
		"split a|bc":      {"ns", "a", "bc"},
		"split ab|c":      {"ns", "ab", "c"},
		"one part abc":    {"ns", "abc"},
		"namespace moved": {"nsa", "bc"},
		"empty part":      {"ns", "a", "bc", ""},
		"no parts":        {"ns"},
		"empty namespace": {"", "ns"},
	}
	seen := make(map[string]string)
	for name, in := range distinct {
		k := DeriveKey(in[0], in[1:]...)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s derive the same key", name, other)
		}
		seen[k] = name
	}
}

func TestDeriveKeyHMAC(t *testing.T) {
	t.Parallel()
	plain := DeriveKey("charge", "order-1")
	k1 := DeriveKeyHMAC([]byte("secret-1"), "charge", "order-1")
	k2 := DeriveKeyHMAC([]byte("secret-2"), "charge", "order-1")
	assert.Equal(t, k1, DeriveKeyHMAC([]byte("secret-1"), "charge", "order-1"))
	assert.NotEqual(t, k1, k2, "the secret changes the key")
	assert.NotEqual(t, plain, k1, "a keyed key differs from the plain one")
	assert.NotEqual(t, plain, DeriveKeyHMAC(nil, "charge", "order-1"))
	require.NoError(t, ValidateKey(k1))
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
		bad            bool
	}{
		{name: "bare", in: "abc-123", want: "abc-123"},
		{name: "quoted", in: `"abc-123"`, want: "abc-123"},
		{name: "quoted with escapes", in: `"a\"b\\c"`, want: `a"b\c`},
		{name: "space inside", in: "a b", want: "a b"},
		{name: "max length", in: strings.Repeat("k", MaxKeyLen), want: strings.Repeat("k", MaxKeyLen)},
		{name: "empty", in: "", bad: true},
		{name: "empty quoted", in: `""`, bad: true},
		{name: "too long", in: strings.Repeat("k", MaxKeyLen+1), bad: true},
		{name: "too long quoted", in: `"` + strings.Repeat("k", MaxKeyLen+1) + `"`, bad: true},
		{name: "control byte", in: "a\x01b", bad: true},
		{name: "tab", in: "a\tb", bad: true},
		{name: "non-ascii", in: "clé", bad: true},
		{name: "unterminated", in: `"abc`, bad: true},
		{name: "lone quote", in: `"`, bad: true},
		{name: "inner quote", in: `"a"b"`, bad: true},
		{name: "bad escape", in: `"a\nb"`, bad: true},
		{name: "trailing backslash", in: `"ab\"`, bad: true},
		{name: "two lines merged", in: "a, b", bad: true},
		{name: "comma", in: "a,b", bad: true},
		{name: "comma quoted", in: `"a, b"`, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKey(tc.in)
			if tc.bad {
				require.ErrorIs(t, err, ErrInvalidKey)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			again, err := ParseKey(key.Quote(got))
			require.NoError(t, err)
			assert.Equal(t, got, again, "quoting round-trips")
		})
	}
}

// TestKeyHoldsNoComma: a proxy that merges two Idempotency-Key lines
// makes one value "a, b" (RFC 9110, 5.3). Two lines are ambiguous, and so
// is their merge: ValidateKey refuses it, and Do refuses to send it,
// without the network. Keys idem mints and derives hold no comma.
func TestKeyHoldsNoComma(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a, b", "a,b", ",", "order-1,order-2"} {
		err := ValidateKey(k)
		require.ErrorIs(t, err, ErrInvalidKey, "%q", k)
		var ie *key.InvalidError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, key.List, ie.Problem)
		assert.Contains(t, err.Error(), "holds a comma")
	}

	s := newScripted(t, statuses(201))
	c := newClient(t, quickOptions(Options{}))
	req := post(t, s.srv.URL, `{}`)
	req.Header.Set("Idempotency-Key", "a, b")
	_, err := c.Do(req)
	require.ErrorIs(t, err, ErrInvalidKey)
	assert.Empty(t, s.seen(), "a list of keys is never sent")

	secret := []byte("s")
	for i := range 2000 {
		n := strconv.Itoa(i)
		for _, k := range []string{NewKey(), NewULID(), DeriveKey("ns", n, ","), DeriveKeyHMAC(secret, ",", n)} {
			require.NoError(t, ValidateKey(k))
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b"`, `"\\"`, "", `"`, "\x00", strings.Repeat("x", 300), "a, b", `"a,b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		k, err := ParseKey(in)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidKey)
			return
		}
		require.NoError(t, ValidateKey(k))
		require.NotContains(t, k, ",", "a key is never a list")
		// Bare and quoted forms of a valid key are the same key.
		q, err := ParseKey(key.Quote(k))
		require.NoError(t, err)
		require.Equal(t, k, q)
		if k[0] != '"' {
			b, err := ParseKey(k)
			require.NoError(t, err)
			require.Equal(t, k, b)
		}
	})
}

// TestNewULIDIsMonotonicWhileOthersMint: one goroutine's ULIDs increase
// while others mint at the same time, across millisecond boundaries (a
// reset of the entropy by another caller must not reorder them).
func TestNewULIDIsMonotonicWhileOthersMint(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					NewULID()
				}
			}
		}()
	}
	prev := NewULID()
	for range 50000 {
		k := NewULID()
		if k <= prev {
			close(stop)
			wg.Wait()
			t.Fatalf("%s after %s: ULIDs from one goroutine must increase", k, prev)
		}
		prev = k
	}
	close(stop)
	wg.Wait()
}
