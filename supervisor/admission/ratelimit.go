package admission

import (
	"crypto/sha256"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/supervisor-dev/supervisor/internal/respredis"
)

// The per-key client rate limit (auth.rate_limit, auth.rate_burst) is a
// token bucket per API key. The buckets belong to the keys, not to a
// config generation: a reload (and a repository load or unload, which is
// one) builds a new Keys from the config, and SetKeys hands each key that
// stays, with the same rate and burst, the bucket it had. Without that
// every reload refilled every bucket: a client that triggered loads, or
// an operator reloading often, multiplied the rate (39 requests in 10s
// at rate_limit 2 became 380 with a load every 0.25s). A key whose rate
// or burst changed starts a fresh bucket at the new settings; a key no
// longer listed has its bucket dropped with the old Keys.

// carryBuckets gives ks's keys the buckets old's same keys had, where
// their rate and burst are unchanged. old may be nil (the first keys, or
// authentication was off); ks may be nil (it is off now): nothing to do.
func (ks *Keys) carryBuckets(old *Keys) {
	if ks == nil || old == nil {
		return
	}
	had := make(map[[sha256.Size]byte]*apiKey, len(old.keys))
	for i := range old.keys {
		had[old.keys[i].digest] = &old.keys[i]
	}
	for i := range ks.keys {
		k := &ks.keys[i]
		if o := had[k.digest]; o != nil && o.limiter != nil && k.limiter != nil && o.perSec == k.perSec && o.burst == k.burst {
			k.limiter = o.limiter
		}
	}
}

// newBucket is a full bucket for perSec requests a second and burst at
// once.
func newBucket(perSec, burst int) *rate.Limiter { return rate.NewLimiter(rate.Limit(perSec), burst) }

// With auth.rate_limit_redis, the buckets that decide are in Redis
// (respredis.Limiter, GCRA: one EVALSHA per request), shared by every
// host of a fleet pointing at it, so a key gets rate_limit across the
// fleet as a gateway in front of it would enforce; this host's bucket
// for the key is kept in step (a request Redis allows takes a token
// from it too, when there is one). When Redis does not answer (down,
// slower than respredis.LimitTimeout, or paused for a second after a
// failure) the host's own bucket decides: never unlimited, never
// refusing everything, and each host then allows the key rate_limit on
// its own. Those decisions are counted
// (supervisor_rate_limit_fallbacks_total).

// fleetLimit is the Front's Redis limiter, kept across reloads while
// auth.rate_limit_redis is the same.
type fleetLimit struct {
	url       string
	redis     *respredis.Limiter
	fallbacks atomic.Int64
	// timeout is how long a decision waits for Redis; 0 is
	// respredis.LimitTimeout (tests give Redis longer).
	timeout time.Duration
}

// adopt gives keys (nil: authentication off) the limiter of their
// auth.rate_limit_redis: the one in force when the address is the same,
// else a new one, and the one in force is closed (a decision still
// using it falls back to its local bucket). Called under Front.setKeys.
func (fl *fleetLimit) adopt(keys *Keys, log zerolog.Logger) {
	url := ""
	if keys != nil {
		url = keys.redisURL
	}
	if url != fl.url {
		if err := fl.redis.Close(); err != nil {
			log.Debug().Err(err).Msg("rate limit: closing the old Redis")
		}
		fl.url, fl.redis = url, nil
		if url != "" {
			l, err := respredis.NewLimiter(url, fl.timeout, log)
			if err != nil {
				log.Error().Err(err).Msg("auth.rate_limit_redis: each host limits its keys alone")
			}
			fl.redis = l
		}
	}
	if keys != nil {
		keys.fleet, keys.fallbacks = fl.redis, &fl.fallbacks
	}
}

// allow takes one request of k: from Redis's bucket when Redis answers,
// else from this host's.
func (ks *Keys) allow(k *apiKey) bool {
	if ks.fleet != nil {
		if ok, answered := ks.fleet.Allow(k.bucket, k.perSec, k.burst); answered {
			if ok {
				k.limiter.Allow() // in step, for when Redis fails
			}
			return ok
		}
		ks.fallbacks.Add(1)
	}
	return k.limiter.Allow()
}
