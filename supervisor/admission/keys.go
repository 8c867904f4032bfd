package admission

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"
	"golang.org/x/time/rate"

	"github.com/supervisor-dev/supervisor/internal/respredis"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Keys is the set of accepted API keys and each key's rate limiter.
// Keys are kept as SHA-256 digests and compared in constant time, so
// neither the comparison's timing nor a memory dump gives a key away.
type Keys struct {
	keys         []apiKey
	exemptHealth bool
	// redisURL is auth.rate_limit_redis ("" = none); SetKeys sets fleet
	// to the Front's limiter for it, and fallbacks to the Front's count
	// of decisions Redis did not answer (ratelimit.go).
	redisURL  string
	fleet     *respredis.Limiter
	fallbacks *atomic.Int64
}

type apiKey struct {
	digest [sha256.Size]byte
	// perSec and burst are auth.rate_limit and auth.rate_burst as the
	// key was loaded with (perSec 0 = no limit); limiter is its bucket on
	// this host, nil without a limit, carried over by SetKeys to the next
	// config's key while both stay the same (ratelimit.go). bucket names
	// its bucket in Redis: the digest in hex.
	perSec, burst int
	limiter       *rate.Limiter
	bucket        string
}

// LoadKeys builds the key set from the config (inline keys and the
// keys file). No keys means authentication is off: nil.
func LoadKeys(a config.AuthConfig) (*Keys, error) {
	raw := append([]string(nil), a.APIKeys...)
	if a.APIKeysFile != "" {
		fromFile, err := readKeysFile(a.APIKeysFile)
		if err != nil {
			return nil, err
		}
		raw = append(raw, fromFile...)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	ks := &Keys{exemptHealth: a.ExemptHealth}
	if a.RateLimit > 0 {
		ks.redisURL = a.RateLimitRedis
	}
	seen := map[[sha256.Size]byte]bool{}
	for _, k := range raw {
		key := apiKey{digest: sha256.Sum256([]byte(k))}
		if seen[key.digest] {
			continue // listed twice (inline and in the file): one bucket
		}
		seen[key.digest] = true
		if a.RateLimit > 0 {
			key.perSec, key.burst = a.RateLimit, max(a.RateBurst, 1)
			key.limiter = newBucket(key.perSec, key.burst)
			key.bucket = hex.EncodeToString(key.digest[:])
		}
		ks.keys = append(ks.keys, key)
	}
	return ks, nil
}

// readKeysFile reads one key per line; blank lines and # comments are
// skipped.
func readKeysFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth.api_keys_file: %w", err)
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		k := strings.TrimSpace(sc.Text())
		if k == "" || strings.HasPrefix(k, "#") {
			continue
		}
		if len(k) < config.MinAPIKeyLen {
			return nil, fmt.Errorf("%s:%d: the key is %d characters; use at least %d", path, line, len(k), config.MinAPIKeyLen)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("auth.api_keys_file: %w", err)
	}
	return keys, nil
}

// Verify refuses a request that may not pass from its header alone: 401
// without a valid key, 429 over the key's rate. path is the request's
// normalised path.
func (ks *Keys) Verify(h *fasthttp.RequestHeader, path string) Refusal {
	if ks == nil || (ks.exemptHealth && strings.HasPrefix(path, "/v2/health/")) {
		return Refusal{}
	}
	match, r := ks.Authenticate(h)
	if r.Status != 0 {
		return r
	}
	if match.limiter != nil && !ks.allow(match) {
		return Refusal{Status: fasthttp.StatusTooManyRequests, Header: fasthttp.HeaderRetryAfter, Value: "1",
			Msg: "rate limit exceeded for this API key"}
	}
	return Refusal{}
}

// Authenticate finds the key the header presents (401 without a valid
// one), taking nothing from its rate: the gRPC listener asks it before it
// reads a message, and verify again, rate included, once it has.
func (ks *Keys) Authenticate(h *fasthttp.RequestHeader) (*apiKey, Refusal) {
	key := presentedKey(h)
	if key == nil {
		return nil, Refusal{Status: fasthttp.StatusUnauthorized, Header: fasthttp.HeaderWWWAuthenticate, Value: `Bearer realm="supervisor"`,
			Msg: "missing API key: send Authorization: Bearer <key> or X-API-Key: <key>"}
	}
	digest := sha256.Sum256(key)
	var match *apiKey
	for i := range ks.keys {
		// No early exit: every key is compared.
		if subtle.ConstantTimeCompare(digest[:], ks.keys[i].digest[:]) == 1 {
			match = &ks.keys[i]
		}
	}
	if match == nil {
		return nil, Refusal{Status: fasthttp.StatusUnauthorized, Header: fasthttp.HeaderWWWAuthenticate,
			Value: `Bearer realm="supervisor", error="invalid_token"`, Msg: "invalid API key"}
	}
	return match, Refusal{}
}

// presentedKey is the key from "Authorization: Bearer <key>" or
// "X-API-Key: <key>"; nil when neither is there.
func presentedKey(h *fasthttp.RequestHeader) []byte {
	if v := h.Peek("Authorization"); len(v) > 7 && strings.EqualFold(string(v[:7]), "bearer ") {
		return bytes.TrimSpace(v[7:])
	}
	if v := h.Peek("X-API-Key"); len(v) > 0 {
		return v
	}
	return nil
}

// Owner names the API key h presents, for what a key owns (its system
// shared memory regions, supervisor/sysshm): the key's SHA-256 in hex,
// never the key itself; "" when authentication is off, so that every
// client shares one owner then. Call it on a request Verify passed.
func (g *Gate) Owner(h *fasthttp.RequestHeader) string {
	if g.keys.Load() == nil {
		return ""
	}
	key := presentedKey(h)
	if key == nil {
		return ""
	}
	d := sha256.Sum256(key)
	return hex.EncodeToString(d[:])
}

// Owners are the owners (Gate.Owner) the keys make: each key's SHA-256
// in hex, or only "" when authentication is off (ks nil).
func (ks *Keys) Owners() map[string]bool {
	if ks == nil {
		return map[string]bool{"": true}
	}
	out := make(map[string]bool, len(ks.keys))
	for _, k := range ks.keys {
		out[hex.EncodeToString(k.digest[:])] = true
	}
	return out
}
