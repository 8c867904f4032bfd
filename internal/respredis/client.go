package respredis

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Bounds on what Redis may cost a request.
const (
	// GetTimeout is the longest a lookup waits for Redis.
	GetTimeout = 20 * time.Millisecond
	// setTimeout bounds a background SET; maxSets is how many may be in
	// flight before new ones are dropped.
	setTimeout = time.Second
	maxSets    = 64
	// logEvery is how often a failing Redis is logged.
	logEvery = 10 * time.Second
	// KeyPrefix starts every key this package writes.
	KeyPrefix = "supervisor:respcache:"
)

// Client is one Redis server's cache. Its methods are safe for concurrent
// use and never return an error: a failure is a miss.
type Client struct {
	rdb  *redis.Client
	sets chan struct{} // a token per SET in flight
	log  zerolog.Logger
	// onFailure is what a failure's log line says happens instead
	// ("response cache: ... serving as a miss").
	onFailure string
	lastLog   atomic.Int64 // Unix nanoseconds of the last failure logged
	// maxValue is the largest maxLen a Get has asked for: what the
	// connections' replies are held to (guard.go).
	maxValue atomic.Int64
}

// New connects lazily to the server of url, "redis://host:port/db".
func New(url string, log zerolog.Logger) (*Client, error) {
	return newClient(url, log, "response cache", "serving as a miss")
}

// newClient is New for what uses the server (in its errors and logs),
// and what a failure makes it do instead.
func newClient(url string, log zerolog.Logger, what, onFailure string) (*Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s redis %q: %w (use redis://host:port/db)", what, url, err)
	}
	opt.ContextTimeoutEnabled = true // the per-call deadlines below bound each call
	opt.MaxRetries = -1              // a retry would not fit in GetTimeout
	opt.DialTimeout = 200 * time.Millisecond
	c := &Client{sets: make(chan struct{}, maxSets), log: log.With().Str("redis", opt.Addr).Logger(),
		onFailure: what + ": Redis failed; " + onFailure + " (logged at most every 10s)"}
	opt.Dialer = guardDialer(redis.NewDialer(opt), &c.maxValue)
	c.rdb = redis.NewClient(opt)
	return c, nil
}

// key is the Redis key of a cache key.
func key(k [32]byte) string { return KeyPrefix + hex.EncodeToString(k[:]) }

// Get returns the payload stored under k; false on a miss, a failure, when
// Redis does not answer within GetTimeout or before deadline (the zero
// time: none), or when the value is longer than maxLen (the largest entry
// the caller would cache): that is a miss without the value crossing the
// network. It asks GETRANGE k 0 maxLen, one round trip that returns at
// most maxLen+1 bytes whatever Redis holds (up to its 512 MB), where a
// GET would make the worker read and allocate all of it; STRLEN then GET
// would take two round trips of the 20 ms and race a SET between them,
// and a Lua script costs Redis a script run per lookup and is refused by
// servers that turn scripting off. GETRANGE answers "" for a missing key,
// and a stored payload is never empty (Set drops those), so "" is a miss.
func (c *Client) Get(k [32]byte, deadline time.Time, maxLen int) ([]byte, bool) {
	if c == nil || maxLen <= 0 {
		return nil, false
	}
	d := GetTimeout
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	if d <= 0 {
		return nil, false
	}
	c.allow(int64(maxLen))
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	b, err := c.rdb.GetRange(ctx, key(k), 0, int64(maxLen)).Bytes()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			c.failed("GETRANGE", err)
		}
		return nil, false
	}
	if len(b) == 0 || len(b) > maxLen {
		return nil, false
	}
	return b, true
}

// Set stores payload under k for ttl (0: no expiry) in the background; it
// is dropped when maxSets are already in flight, when it is empty, or when
// it is longer than maxLen (Get would not read it back). payload is
// copied.
func (c *Client) Set(k [32]byte, payload []byte, ttl time.Duration, maxLen int) {
	if c == nil || len(payload) == 0 || len(payload) > maxLen {
		return
	}
	select {
	case c.sets <- struct{}{}:
	default:
		return
	}
	p := append([]byte(nil), payload...)
	go func() {
		defer func() { <-c.sets }()
		ctx, cancel := context.WithTimeout(context.Background(), setTimeout)
		defer cancel()
		if err := c.rdb.Set(ctx, key(k), p, ttl).Err(); err != nil {
			c.failed("SET", err)
		}
	}()
}

// allow raises the bound on replies to n, the longest value asked for.
func (c *Client) allow(n int64) {
	for {
		cur := c.maxValue.Load()
		if n <= cur || c.maxValue.CompareAndSwap(cur, n) {
			return
		}
	}
}

// failed logs a failure, at most once every logEvery.
func (c *Client) failed(op string, err error) {
	now := time.Now().UnixNano()
	last := c.lastLog.Load()
	if now-last < int64(logEvery) || !c.lastLog.CompareAndSwap(last, now) {
		return
	}
	c.log.Warn().Err(err).Str("op", op).Msg(c.onFailure)
}

// Close closes the connections.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	return c.rdb.Close()
}
