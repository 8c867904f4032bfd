// Package fdlimit tells whether the process's open-file limit
// (RLIMIT_NOFILE) holds the descriptors a master's config lets it have
// open at once, so that the operator learns it from `supervisor check`
// and the start log rather than from connections failing with EMFILE
// under load.
//
// The model:
//
//   - The master holds one descriptor per client connection (up to
//     limits.max_connections, and grpc.max_connections when gRPC is on),
//     one per request waiting on a worker (up to limits.max_in_flight;
//     with no cap, up to every client connection and grpc.max_rpcs), and
//     about perWorker for each worker (its pipes, its pool's idle
//     connections), twice over while a reload replaces workers
//     surge-first, plus a fixed share of its own (listeners, control
//     socket, scoreboard, epoll, stdio). Need is that estimate.
//   - Go raises the soft limit to the hard one at start (os, Go 1.19), so
//     the limit that counts is the hard one, LimitNOFILE= in a systemd
//     unit; Limit reads the soft limit after that raise.
//
// Pitfalls for the caller:
//
//   - A shortfall is a warning, never a refusal: a config sized for
//     peaks may run for ever below them.
package fdlimit
