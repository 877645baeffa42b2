// This file holds the wait between attempts: Backoff, capped exponential
// backoff with full jitter, and ParseRetryAfter.

package idem

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff returns how long to wait before retry n (n = 1 before the second
// attempt) under capped exponential backoff with full jitter:
//
//	ceiling = min(max, base · 2^(n-1))
//	wait    = uniform random in [0, ceiling)
//
// With the defaults (base 200ms, max 10s) the ceilings are:
//
//	retry  ceiling   mean wait
//	1      200ms     100ms
//	2      400ms     200ms
//	3      800ms     400ms
//	4      1.6s      800ms
//	5      3.2s      1.6s
//	6      6.4s      3.2s
//	7+     10s       5s
//
// Full jitter spreads a crowd of clients that failed together across the
// whole window, so they do not come back in lockstep. Backoff is a pure
// function of its arguments and a random draw: safe for concurrent use. A
// non-positive base or n gives 0.
func Backoff(n int, base, max time.Duration) time.Duration {
	if n < 1 || base <= 0 {
		return 0
	}
	ceiling := base
	for i := 1; i < n && ceiling < max; i++ {
		if ceiling > math.MaxInt64/2 {
			ceiling = max // doubling would overflow
			break
		}
		ceiling *= 2
	}
	if ceiling > max {
		ceiling = max
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling)
}

// ParseRetryAfter reads a Retry-After header value (RFC 9110, section
// 10.2.3): either delay-seconds ("120") or an HTTP-date in any of its three
// forms (IMF-fixdate, RFC 850, asctime), measured against now. A date in the
// past gives 0. ok is false if v is neither. Very large values saturate
// rather than overflow; callers clamp the result.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
				return maxDuration, true
			}
			return 0, false
		}
		if secs > uint64(maxDuration/time.Second) {
			return maxDuration, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	if d < 0 {
		d = 0
	}
	return d, true
}

const maxDuration = time.Duration(1<<63 - 1)
