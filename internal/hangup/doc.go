// Package hangup tells a process that the peer of a connection it is
// answering has hung up, as an event rather than by polling: Watch calls
// onGone once when the peer goes; PeerClosed is the polling fallback
// when Watch fails.
//
// Invariants:
//
//   - One Watcher per process (Default): one epoll instance and one
//     goroutine in epoll_wait. A registration is one-shot and waits only
//     for hang-ups (hangupEvents), never for reading.
//   - An event that races with its cancel is dropped (tokens are never
//     reused); after cancel returns, onGone does not run.
//   - Registering and deregistering run inside RawConn.Control, so the
//     descriptor cannot be closed and reused by another socket meanwhile.
//   - A hang-up is the peer's FIN, a reset or an error, whatever it sent
//     before: a client that half-closes (shutdown(SHUT_WR)) and waits for
//     its answer is taken as gone, as nginx takes it. PeerClosed sees it
//     gone only once it has read what it sent.
//
// Pitfalls for the caller:
//
//   - Call Watch and cancel only while the connection is yours (its
//     handler has not returned): Control protects the descriptor during
//     the call, not your right to a connection the server has handed to
//     another request.
//   - onGone runs on the Watcher's goroutine: it must be short, must not
//     block, and must not call its own cancel, which waits for it.
package hangup
