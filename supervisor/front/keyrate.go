package front

import (
	"sync"
	"time"
)

// abandonKeyRate is how many bytes per second of abandoned requests the
// master decodes for their poison keys (poison.go): about a quarter of
// one core at the ~170 MB/s a V2 JSON decode runs at (BenchmarkPoisonKey),
// which no legitimate pace of hang-ups nears and a flood cannot exceed.
const abandonKeyRate = 64 << 20

// keyRate is a token bucket of bytes that bounds the decoding done to key
// abandoned requests; its zero value is full and ready. Its depth is
// max_body_bytes (passed in), so one request of any admitted size can be
// decoded when the bucket is full. Safe for concurrent use.
type keyRate struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// take spends n bytes at now when the bucket holds that many, refilled at
// abandonKeyRate up to depth since the last call; false spends nothing.
func (k *keyRate) take(n, depth int64, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last.IsZero() {
		k.tokens = float64(depth)
	} else if dt := now.Sub(k.last); dt > 0 {
		k.tokens += dt.Seconds() * abandonKeyRate
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
