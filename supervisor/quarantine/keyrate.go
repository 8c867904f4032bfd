package quarantine

import (
	"sync"
	"time"
)

// keyRate is a token bucket of bytes that bounds the decoding done to key
// abandoned requests (limits.poison_key_rate, read per call so that a
// reload applies to the next hang-up); its zero value is full and ready.
// Its depth is max_body_bytes (passed in), so one request of any admitted
// size can be decoded when the bucket is full. Safe for concurrent use.
type keyRate struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// take spends n bytes at now when the bucket holds that many, refilled at
// rate bytes per second up to depth since the last call; false spends
// nothing. A rate of 0 or less refuses every take: abandoned requests are
// then never decoded.
func (k *keyRate) take(n, depth, rate int64, now time.Time) bool {
	if rate <= 0 {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last.IsZero() {
		k.tokens = float64(depth)
	} else if dt := now.Sub(k.last); dt > 0 {
		k.tokens += dt.Seconds() * float64(rate)
	}
	if k.tokens > float64(depth) {
		k.tokens = float64(depth)
	}
	if now.After(k.last) {
		k.last = now
	}
	if k.tokens < float64(n) {
		return false
	}
	k.tokens -= float64(n)
	return true
}

// owe spends n bytes found to be due after take allowed a request (its
// body decompressed to more than was sent), into debt if need be: the
// bucket then refuses until the refill pays it off, so the rate holds on
// average however far a body inflates.
func (k *keyRate) owe(n int64) {
	if n <= 0 {
		return
	}
	k.mu.Lock()
	k.tokens -= float64(n)
	k.mu.Unlock()
}
