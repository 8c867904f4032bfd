// Package respredis is the supervisors' client of a Redis server that a
// fleet of them shares: the response cache's optional second level, so a
// hit on one host serves the same request on another (Client), and the
// API keys' rate limit, so a key gets its rate across the fleet (Limiter,
// ratelimit.go: GCRA in one EVALSHA). Both share the connection settings,
// the reply guard and the throttled failure log.
//
// Invariants:
//
//   - Redis is an optimisation, never a dependency: any failure or timeout
//     is a miss (Client) or the caller's own bucket (Limiter), logged at
//     most every 10 s; a request never fails because of Redis.
//   - Keys are the request's SHA-256 cache key (internal/respcache), which
//     holds the model, its settings and its weights' identity, so
//     different models and weights never meet, whatever their paths.
//   - A Get waits at most GetTimeout (20 ms), or less before the request's
//     deadline; a Set runs in the background and is dropped when too many
//     are in flight.
//   - A value longer than the caller's largest entry is a miss that never
//     crosses the network (Get asks GETRANGE for one byte more).
//   - Every reply is checked as it arrives (guard.go), since go-redis
//     allocates what a reply declares: a lying server or a man in the
//     middle costs a dropped connection, not the claim.
//
// Settings and metrics: docs/response-cache.md and docs/http-api.md.
package respredis
