// Package respredis is the supervisors' client of a Redis server that a
// fleet of them shares: the response cache's optional second level, so a
// hit on one host serves the same request on another (Client), and the
// API keys' rate limit, so a key gets its rate across the fleet (Limiter,
// ratelimit.go: GCRA in one EVALSHA, LimitTimeout, a pause after a
// failure; the caller falls back to its own bucket). Both share the
// connection settings, the reply guard and the throttled failure log.
//
// Entries are SET with PX (the model's TTL) under a prefix and the hex of
// the request's SHA-256 key (internal/respcache), which holds the model's
// name and settings and the SHA-256 of the weights that computed the
// answer, so different models and weights never meet, whatever path or
// file times they have on each host. Redis is an
// optimisation, never a dependency: a GET waits at most 20 ms (less when
// the request's deadline is nearer), a SET runs in the background and is
// dropped when too many are in flight, and any failure or timeout is a
// miss, logged at most every 10 s. A request never fails because of Redis.
// A value longer than the largest entry the caller caches (the model's
// local segment's MaxEntry, a sixteenth of response_cache.max_bytes) is
// a miss that is never sent: Get asks GETRANGE for at most one byte more,
// so a Redis holding a 512 MB value under a key costs a worker that
// byte, not the value; Set does not store such values. A server that
// lies (or a man in the middle) is bounded too: go-redis allocates the
// length a reply declares before reading it, so every connection's
// replies are checked as they arrive (guard.go), and one declaring more
// than the largest value asked for plus 64 KiB, or aggregates declaring
// more elements than a handshake needs, drops the connection: a miss,
// not the claim.
package respredis
