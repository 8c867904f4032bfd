// Package lb is a least-connections reverse proxy over HTTP backends on
// Unix sockets. It has two users: the master forwards every public request,
// unchanged, to one of the prep worker processes; each prep worker forwards
// a model's tensors to one of the infer workers that serve that model
// (DoRoute). It knows nothing about models.
//
// The model:
//
//   - The pool is an immutable snapshot swapped atomically by SetBackends, so
//     picking a backend takes no lock: one atomic pointer load, one atomic
//     counter bump and one atomic load per backend (two when several tie).
//   - A request goes to the backend with the fewest requests in flight; ties
//     are broken by a counter that rotates on every pick, so idle equal
//     backends are used in round-robin order. A Route keeps its own
//     counter, so its requests rotate over its backends whatever other
//     routes do.
//   - DoRoute restricts one request to a Route: the backends a caller's
//     predicate (asked by backend name at each pick) accepts; least
//     connections and retries among those only. The lb still knows nothing
//     of why; the prep worker uses it to send a model's requests only to
//     the infer workers that loaded that model.
//   - A request is retried on another backend only when it is a fact that it
//     was never sent: the dial to the Unix socket failed (the worker is gone or
//     not listening) or the backend had no free connection. Once bytes may
//     have reached a worker the request is answered 502 (504 on timeout) and
//     never replayed, because inference requests need not be idempotent.
//   - A backend removed by SetBackends gets no new request. Requests already
//     on it finish; once the last has, its keep-alive connections are closed
//     and Idle reports it. This is what lets the master
//     start a replacement worker first and stop the old one only once drained
//     (and a prep worker drop an infer worker that went away).
//   - A caller whose client may hang up passes a Client (DoRouteFor,
//     ServeHTTPFor; gone.go): watched for its hang-up (an event, such as
//     hangup.Peer's epoll registration or an RPC context's end,
//     ContextClient) or, when it cannot be, polled
//     every ClientPoll while the request waits on a backend; once it has
//     gone the request's upstream connection is closed at once (not the
//     pool's others), so the worker
//     sees nobody waits and stops; nothing is retried and nothing
//     answered (ErrClientGone, StatusClientClosedRequest). Watched
//     requests go through the backends' own RoundTripper (transport.go),
//     which holds the connection it is using where the watch can close it.
//   - Every response carries X-Request-Id: the client's, or one generated from
//     a random per-Proxy prefix and a counter. Error bodies are KServe V2
//     style JSON: {"error":"..."}.
//
// Pitfalls for a caller that retires backends (the master, for prep workers):
//
//   - Retire a worker in this order: SetBackends without it, wait on Idle
//     (its pooled connections are closed by then), then stop it. A worker
//     that exits while still in the pool turns each idle pooled connection
//     to it into one 502: the next request on it was written before the
//     close was seen, so it is not retried. Later requests fail to dial and
//     are retried elsewhere.
//   - For the same reason workers must keep idle keep-alive connections open
//     longer than the proxy does (IdleConnTimeout). With fasthttp.Server leave
//     IdleTimeout and ReadTimeout at zero (unlimited) or set IdleTimeout well
//     above IdleConnTimeout.
//   - Upstream responses are read whole before they are written back, and
//     their headers must fit fasthttp's default 4 KiB read buffer. A
//     caller that must bound what it holds passes an AnswerGate
//     (answergate.go): asked from the header, before the body is read; a
//     refused answer is never read and its connection is closed.
package lb
