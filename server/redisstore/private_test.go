package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// privateRedis starts a redis-server of its own on a free loopback port
// with the given extra arguments, for tests that reconfigure or fill a
// server, and returns a client for it. The server is killed when the test
// ends. Without a redis-server binary the test is skipped, or fails under
// CI=true.
func privateRedis(t *testing.T, args ...string) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no redis-server on PATH and CI=true")
		}
		t.Skip("no redis-server on PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, args...)
	cmd := exec.Command(bin, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	t.Cleanup(func() { rdb.Close() })
	require.Eventually(t, func() bool { return rdb.Ping(context.Background()).Err() == nil },
		10*time.Second, 20*time.Millisecond, "redis-server on port %d never answered", port)
	return rdb
}

// TestFullRedis fills a Redis with a small maxmemory (noeviction) with
// claims until it refuses one. Then new keys are refused with ErrFull,
// which the middleware answers as a full store (503, Retry-After: 30),
// replays still work, and the outcome of a key claimed before is still
// recorded: Complete's first write is not one Redis refuses when full.
func TestFullRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := privateRedis(t, "--maxmemory-policy", "noeviction")
	used, err := usedMemory(ctx, rdb)
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+(1<<20), 10)).Err())
	s := newStore(t, rdb, redisstore.Options{})

	running := server.Key{Scope: "s", Key: "running"}
	c, err := s.Claim(ctx, running, "fp", time.Minute)
	require.NoError(t, err)
	done := server.Key{Scope: "s", Key: "done"}
	d, err := s.Claim(ctx, done, "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, done, d.Token, server.StoredResponse{Status: 201, Body: []byte("done")}, time.Hour))

	fp := strings.Repeat("f", 1024)
	full := false
	for i := range 100_000 {
		_, err := s.Claim(ctx, server.Key{Scope: "s", Key: fmt.Sprintf("fill-%d", i)}, fp, time.Minute)
		if errors.Is(err, redisstore.ErrFull) {
			full = true
			break
		}
		require.NoError(t, err)
	}
	require.True(t, full, "Redis never filled up")

	// Redis's memory use moves a little on its own (buffers freed), so a
	// key may still fit just after a refusal; each one that fits takes
	// more room, and a refusal follows.
	var refused error
	for i := 0; refused == nil && i < 1000; i++ {
		_, refused = s.Claim(ctx, server.Key{Scope: "s", Key: fmt.Sprintf("new-%d", i)}, fp, time.Minute)
	}
	require.ErrorIs(t, refused, redisstore.ErrFull, "a new key is refused")
	require.ErrorIs(t, refused, server.ErrStoreFull, "as a full store, not a failing one")
	h := server.Middleware(s, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	w := httptest.NewRecorder()
	for i := 0; i < 1000 && (i == 0 || w.Code == http.StatusCreated); i++ {
		w = httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(fp))
		r.Header.Set(server.DefaultHeader, fmt.Sprintf("http-%d", i))
		h.ServeHTTP(w, r)
	}
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "30", w.Header().Get("Retry-After"))
	assert.Contains(t, w.Body.String(), server.ProblemStoreFull)
	replay, err := s.Claim(ctx, done, "fp", time.Minute)
	require.NoError(t, err, "a replay writes nothing and works")
	assert.Equal(t, []byte("done"), replay.Record.Response.Body)

	body := bytes.Repeat([]byte("b"), 64<<10)
	require.NoError(t, s.Complete(ctx, running, c.Token, server.StoredResponse{Status: 201, Body: body}, time.Hour),
		"the outcome of work that ran is recorded over maxmemory")
	replay, err = s.Claim(ctx, running, "fp", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, body, replay.Record.Response.Body)
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("no used_memory in INFO memory")
}
