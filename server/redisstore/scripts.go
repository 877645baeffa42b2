package redisstore

import "github.com/redis/go-redis/v9"

// A record is one Redis hash, named by recordKey, with these fields:
//
//	s  state: "r" running, "c" completed
//	f  the fingerprint of the request that claimed it
//	t  the lease token of the claim (kept once completed)
//	l  running: when the lease lapses, in Unix milliseconds
//	x  completed: when the retention ends, in Unix milliseconds
//	n  completed: the nonce of the Complete call that stored the outcome
//	c  completed: the status code
//	h  completed: the header (encodeHeader; empty for a nil header)
//	b  completed: the body
//
// The key's own expiry (PEXPIRE) is when Redis forgets the record: a lease
// plus Options.Abandon for a running record, the retention for a completed
// one. Every time is taken from the Redis server's clock (TIME), never the
// caller's, so any number of processes agree on when a lease lapses. Scripts
// are replicated by their effects (the default since Redis 5), so TIME
// before a write is allowed and replicas receive plain HSET and PEXPIREAT.
//
// Each script touches only KEYS[1], as Redis Cluster requires.
//
// Running out of memory: none of the scripts is declared with flags, so
// Redis applies its historical rule to them: a command that may grow memory
// (HSET) is refused while Redis is over maxmemory unless the script has
// already written. Claim's first write is that HSET, so a full Redis
// refuses new keys and takeovers (the middleware answers 503) while
// replays, which write nothing, still work. Complete writes the key's
// expiry first, so the outcome of work that has already run is stored even
// over maxmemory: Options.MaxResponse bounds how far.

// claimScript claims KEYS[1] for fingerprint ARGV[1] under the new token
// ARGV[2], with a lease of ARGV[3] ms; ARGV[4] is Options.Abandon in ms.
//
// It answers {1, takenOver} when the caller acquired the key, or
// {0, state, fingerprint, expiry, status, header, body} with the existing
// record otherwise (a running record has only the first four). A record
// already running under ARGV[2] is this very claim, sent again after its
// reply was lost (the client library retries on a broken connection): it
// is reported acquired again.
//
// Checks that Redis's own expiry makes redundant (a running record past its
// abandon time, a completed one past its retention) are repeated here, on
// the same clock, so the script's answer never depends on when Redis gets
// round to deleting an expired key.
var claimScript = redis.NewScript(`
local now = redis.call('TIME')
now = now[1] * 1000 + math.floor(now[2] / 1000)
local r = redis.call('HMGET', KEYS[1], 's', 'f', 't', 'l', 'x', 'c', 'h', 'b')
local lease = tonumber(ARGV[3])
local abandon = tonumber(ARGV[4])
local taken = 0
if r[1] == 'r' then
	if r[3] == ARGV[2] then
		return {1, 0}
	end
	local l = tonumber(r[4])
	if l + abandon > now then
		if l >= now or r[2] ~= ARGV[1] then
			return {0, 'r', r[2], r[4]}
		end
		taken = 1
	end
elseif r[1] == 'c' then
	if tonumber(r[5]) > now then
		return {0, 'c', r[2], r[5], r[6], r[7], r[8]}
	end
end
if r[1] and taken == 0 then
	redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 's', 'r', 'f', ARGV[1], 't', ARGV[2], 'l', now + lease)
redis.call('PEXPIRE', KEYS[1], lease + abandon)
return {1, taken}
`)

// renewScript extends the lease on KEYS[1] held under token ARGV[1] to
// ARGV[2] ms from now; ARGV[3] is Options.Abandon in ms. It answers 1, or 0
// if the key is not running under the token.
var renewScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 's', 't')
if r[1] ~= 'r' or r[2] ~= ARGV[1] then
	return 0
end
local now = redis.call('TIME')
now = now[1] * 1000 + math.floor(now[2] / 1000)
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'l', now + lease)
redis.call('PEXPIRE', KEYS[1], lease + tonumber(ARGV[3]))
return 1
`)

// completeScript stores the outcome of KEYS[1] held under token ARGV[1]:
// ARGV[2] the call's nonce, ARGV[3] status, ARGV[4] header, ARGV[5] body,
// ARGV[6] retention in ms. It answers 1 when stored, 0 if the key is not
// running under the token.
//
// A record completed under the token by a call with the same nonce is this
// very call, sent again after its reply was lost: it answers 1 again. A
// second Complete call (another nonce) finds the record completed and
// answers 0, as the Store contract requires.
var completeScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 's', 't', 'n')
if r[1] == 'c' and r[2] == ARGV[1] and r[3] == ARGV[2] then
	return 1
end
if r[1] ~= 'r' or r[2] ~= ARGV[1] then
	return 0
end
local now = redis.call('TIME')
now = now[1] * 1000 + math.floor(now[2] / 1000)
local retention = tonumber(ARGV[6])
redis.call('PEXPIRE', KEYS[1], retention)
redis.call('HSET', KEYS[1], 's', 'c', 'n', ARGV[2], 'c', ARGV[3], 'h', ARGV[4], 'b', ARGV[5], 'x', now + retention)
redis.call('HDEL', KEYS[1], 'l')
return 1
`)

// releaseScript deletes KEYS[1] if it is running under token ARGV[1],
// answering 1, or 0 otherwise.
var releaseScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 's', 't')
if r[1] ~= 'r' or r[2] ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
return 1
`)
