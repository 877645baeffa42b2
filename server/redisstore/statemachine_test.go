package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestStateMachine drives redisstore through random sequences of claims,
// renewals, completions, releases, lookups, leases lapsing and the service
// restarting (a new Store on the same Redis), each answer, and every key's
// record after each step, checked against storetest's reference model;
// rapid shrinks a failing sequence to a minimal one. Leases lapse on
// Redis's clock only when the machine says so: a script sets the record's
// lease (or retention) end just past, so no step depends on how long
// another takes.
func TestStateMachine(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		prefix := testPrefix(t, rdb)
		runs := 0
		storetest.RunStateMachine(t, drive, func(storetest.T) storetest.Target {
			runs++
			opts := redisstore.Options{Prefix: prefix + strconv.Itoa(runs) + ":"}
			s, err := redisstore.New(rdb, opts)
			if err != nil {
				t.Fatalf("redisstore.New: %v", err)
			}
			return storetest.Target{
				Store: s,
				Restart: func(storetest.T) (server.Store, error) {
					return redisstore.New(rdb, opts)
				},
				Lapse: func(ctx context.Context, k server.Key) error {
					return lapseScript.Run(ctx, rdb, []string{redisstore.RecordKey(opts.Prefix, k)}).Err()
				},
				Peek: func(ctx context.Context, k server.Key) (server.Record, bool, error) {
					return peek(ctx, rdb, redisstore.RecordKey(opts.Prefix, k))
				},
			}
		})
	})
}

// lapseScript makes the lease of a running record lapse, or the retention
// of a completed one end, a millisecond ago on Redis's clock.
var lapseScript = redis.NewScript(`
local now = redis.call('TIME')
now = now[1] * 1000 + math.floor(now[2] / 1000)
local s = redis.call('HGET', KEYS[1], 's')
if s == 'r' then
	redis.call('HSET', KEYS[1], 'l', now - 1)
elseif s == 'c' then
	redis.call('HSET', KEYS[1], 'x', now - 1)
end
return 1
`)

// peek reads a record's hash as the store laid it out (see scripts.go).
func peek(ctx context.Context, rdb redis.UniversalClient, key string) (server.Record, bool, error) {
	v, err := rdb.HMGet(ctx, key, "s", "f", "c", "b", "l", "x").Result()
	if err != nil {
		return server.Record{}, false, err
	}
	field := func(i int) string { s, _ := v[i].(string); return s }
	ms := func(i int) time.Time { n, _ := strconv.ParseInt(field(i), 10, 64); return time.UnixMilli(n) }
	rec := server.Record{Fingerprint: field(1)}
	switch field(0) {
	case "":
		return server.Record{}, false, nil
	case "r":
		rec.LeaseExpires, rec.ExpiresAt = ms(4), ms(4)
	case "c":
		status, err := strconv.Atoi(field(2))
		if err != nil {
			return server.Record{}, false, err
		}
		rec.Completed, rec.ExpiresAt = true, ms(5)
		rec.Response = server.StoredResponse{Status: status, Body: []byte(field(3))}
	default:
		return server.Record{}, false, errors.New("redisstore record of unknown state " + field(0))
	}
	return rec, true, nil
}

// drive runs storetest's state machine on rapid.
func drive(t *testing.T, run func(storetest.T, storetest.Steps)) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, func(actions map[string]func(storetest.Draw)) {
			m := make(map[string]func(*rapid.T), len(actions))
			for name, act := range actions {
				m[name] = func(rt *rapid.T) {
					act(func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) })
				}
			}
			rt.Repeat(m)
		})
	})
}
