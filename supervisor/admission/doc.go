// Package admission decides, from a request's header alone, whether the
// master takes it: API keys and their rate limits (keys.go,
// ratelimit.go), route and method (route.go), body size, framing and
// encoding, the client's deadline, readiness, limits.max_in_flight and
// the body budget (limits.max_body_bytes_in_flight: Bodies, an
// internal/budget with lanes all, small, large and answers, bodies.go).
// Both fronts decide with one Gate: the public front each request's
// header, the gRPC front an RPC's header (Gate.AdmitMessage) and its
// messages' and answers' bytes (Gate as grpcfront.Budget), each a
// Charge of the one budget.
//
// Invariants:
//   - The key is checked before the route: without a key every route
//     answers the same 401, so the models cannot be listed by their 404s.
//   - Refusals are cheapest first; the resources (a max_in_flight place,
//     body-budget bytes) are taken last, and a refusal holds nothing.
//   - A key's rate bucket outlives reloads while its rate and burst stay
//     the same; with auth.rate_limit_redis the buckets are shared by a
//     fleet, and this host's bucket decides when Redis does not answer.
//   - The last eighth of the body budget is kept for bodies of at most
//     1 MiB: large bodies and held answers together hold at most seven
//     eighths; a large body waiting first for room gets the room freed
//     before the others (a Heir lane), and new large bodies queue behind
//     it.
//   - A reloaded limit is the budget's at its next use (SetRoom); what
//     is held stays held.
package admission
