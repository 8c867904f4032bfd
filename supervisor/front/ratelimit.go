package front

import (
	"crypto/sha256"

	"golang.org/x/time/rate"
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
