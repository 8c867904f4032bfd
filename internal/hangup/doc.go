// Package hangup tells a process that the peer of a connection it is
// answering has hung up, as an event rather than by polling.
//
// The model:
//
//   - One Watcher per process (Default): one epoll instance and one
//     goroutine blocked in epoll_wait on it. Watch registers a
//     connection's socket with EPOLLRDHUP|EPOLLHUP|EPOLLERR and
//     EPOLLONESHOT (nothing for reading: the handler's own reads and the
//     Go runtime's poller are untouched, and pending bytes wake nothing),
//     so the first hang-up calls onGone once and the socket then stays
//     quiet until it is deregistered.
//   - Each registration carries a token, never reused, rather than the
//     descriptor or a pointer: an event that races with a cancel finds
//     its token gone and is dropped.
//   - Registering and deregistering run inside RawConn.Control, which
//     holds the descriptor open while they run: a connection that the
//     handler still owns cannot be closed and its number given to another
//     socket in between, so EPOLL_CTL_DEL always names the socket that was
//     added. A connection closed before its cancel runs fails Control;
//     the kernel dropped its registration when the socket was released,
//     and cancel only forgets the token.
//   - A hang-up is the peer's FIN (EPOLLRDHUP), a reset or an error:
//     whatever bytes it sent before are ignored. An HTTP client that
//     shuts down its sending side after a request (shutdown(SHUT_WR))
//     and waits for the answer is therefore taken as gone, as nginx
//     takes it when it watches with EPOLLRDHUP; curl, Go's net/http,
//     fasthttp and browsers never half-close a keep-alive connection.
//     PeerClosed, the polling this replaces and the fallback when Watch
//     fails, sees such a client as gone only once it has read what it
//     sent.
//
// Pitfalls for the caller:
//
//   - Call Watch and cancel only while the connection is yours (the
//     handler that owns it has not returned): Control protects the
//     descriptor during the call, not your right to watch a connection
//     the server has handed to another request.
//   - onGone runs on the Watcher's goroutine: it must be short and must
//     not block (close a connection, signal a channel), and must not call
//     its own cancel, which waits for it.
package hangup
