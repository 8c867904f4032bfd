package respredis

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Bounds on what Redis may cost a rate-limit decision.
const (
	// LimitTimeout is how long a decision waits for Redis by default
	// (NewLimiter's timeout); past it the caller decides alone (its local
	// bucket). A round trip on a LAN takes well under a millisecond.
	LimitTimeout = 20 * time.Millisecond
	// limitPause is how long a failure keeps Allow from asking Redis
	// again, so a dead or blackholed Redis costs one request in a
	// while its LimitTimeout, not every request.
	limitPause = time.Second
	// RateKeyPrefix starts every rate-limit key.
	RateKeyPrefix = "supervisor:ratelimit:"
)

// gcra is the generic cell rate algorithm (a token bucket kept as one
// number: the theoretical arrival time, TAT, of the next request at the
// steady rate) over one key, in one EVALSHA: atomic, one round trip, and
// on Redis's clock, so the hosts' clocks need not agree. A request is
// allowed when taking it leaves TAT at most burst intervals ahead of now;
// the key expires when TAT passes (the bucket is full again). Numbers
// are microseconds, written with %.0f: Lua's numbers are doubles, and
// tostring would write 1.7e+15. Redis before 5 replicates scripts by
// their text, which refuses a write after TIME unless the script asks
// for its effects to be replicated instead.
//
// KEYS[1]: the bucket; ARGV[1]: the interval between requests at the
// steady rate (µs); ARGV[2]: the burst. Returns 1 (allowed) or 0.
var gcra = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new = tat + interval
if new - now > burst * interval then return 0 end
redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', string.format('%.0f', math.ceil((new - now) / 1000)))
return 1
`)

// Limiter is a rate limit kept in Redis, so that every host of a fleet
// sharing the server takes its requests from the same buckets, as a
// gateway in front of them would. Redis is a means to share, never a
// dependency: when it fails or does not answer within the timeout,
// Allow says so and the caller decides alone, and for limitPause after a
// failure Allow answers that at once, without asking. Its methods are
// safe for concurrent use.
type Limiter struct {
	c       *Client
	timeout time.Duration
	// pausedUntil is the Unix nanoseconds until which Allow does not ask.
	pausedUntil atomic.Int64
}

// NewLimiter connects lazily to the server of url, "redis://host:port/db";
// a decision waits at most timeout for it (0: LimitTimeout).
func NewLimiter(url string, timeout time.Duration, log zerolog.Logger) (*Limiter, error) {
	c, err := newClient(url, log, "rate limit", "each host limits its keys alone")
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = LimitTimeout
	}
	return &Limiter{c: c, timeout: timeout}, nil
}

// Allow takes one request from the bucket named bucket (the caller's
// name for a client: a hash of its API key), refilled at perSec requests
// a second and holding burst. answered is false when Redis did not
// decide (failed, slower than the Limiter's timeout, or paused after a
// failure): then allowed means nothing, and the caller decides alone. A
// bucket is named with its perSec and burst, so a change of either
// starts a full bucket.
func (l *Limiter) Allow(bucket string, perSec, burst int) (allowed, answered bool) {
	if l == nil || perSec <= 0 {
		return false, false
	}
	if time.Now().UnixNano() < l.pausedUntil.Load() {
		return false, false
	}
	key := RateKeyPrefix + bucket + ":" + strconv.Itoa(perSec) + ":" + strconv.Itoa(burst)
	interval := max(int64(time.Second/time.Microsecond)/int64(perSec), 1)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	n, err := gcra.Run(ctx, l.c.rdb, []string{key}, interval, burst).Int()
	if err != nil {
		l.pausedUntil.Store(time.Now().Add(limitPause).UnixNano())
		l.c.failed("EVALSHA", err)
		return false, false
	}
	return n == 1, true
}

// Close closes the connections.
func (l *Limiter) Close() error {
	if l == nil {
		return nil
	}
	return l.c.Close()
}
