// Package front is the master's public listener: it decides every
// request from its header, reads admitted bodies into buffers of its own
// under a budget, answers the routes the master serves itself (health,
// server metadata, and the repository routes through Repository), and
// hands inference requests to the lb (Proxy). The gRPC listener
// (supervisor/grpcfront) comes in through ServeInternal, under the same
// admission. The master (Backend) gives it the config in force and its
// readiness; the front never sees workers, pools or the master itself.
//
// The model:
//   - A request is decided from its header alone (admission.go), in
//     fasthttp's HeaderReceived hook: API key and rate (first: without
//     a key every route answers the same 401, so the models cannot be
//     listed by their 404s; the rate's buckets outlive reloads, and with
//     auth.rate_limit_redis are shared by a fleet: ratelimit.go), route,
//     method, model, Content-Length against max_body_bytes,
//     Content-Encoding, the serving gate (SetServing), X-Request-Timeout,
//     then the resources, last: a place under limits.max_in_flight and
//     the declared body in the body budget. A refused request gets no body
//     buffer; its body is declared empty to fasthttp, so none of it is
//     read, and its connection is closed after the answer by a lingering
//     close (linger.go: at most lingerTime and lingerMaxBytes).
//   - Every admitted verdict is finished exactly once, by the handler or
//     by the transport error handler, giving back its max_in_flight place
//     and budget bytes; a body cut by body_timeout/body_min_rate (408)
//     gives them back too.
//   - Body bytes: the front holds at most limits.max_body_bytes_in_flight
//     (bodybudget.go), reserved from the declared length before reading
//     (a chunked body as it grows); the last eighth is kept for bodies of
//     at most 1 MiB. A body of 1 MiB or more is an anonymous mapping
//     (bodybuf.go), unmapped by finish after it is detached from the
//     request: nothing reads it later (the lb's exchange, retries
//     included, is synchronous on the handler's goroutine). Smaller
//     bodies are Go heap, bounded by the soft memory limit
//     (ApplyMemoryLimit: the budget plus a headroom). The gRPC listener's
//     messages are charged to the same budget by the length their
//     prefix declares while they arrive (ReserveBody, ReleaseBody:
//     grpcfront.Budget), then as the body of the request ServeInternal
//     serves (its Content-Length, by hold). The large one that has
//     waited longest for room is the budget's heir (ClaimBody,
//     bodyheir.go): the room it lacks, up to the large bodies' seven
//     eighths, is kept from every other body, and room given back goes
//     to it first.
//   - Answers (answerbudget.go): a proxied answer over 64 KiB is charged
//     to the same budget from its header (lb.AnswerGate, in place of its
//     request's charge), before its body is read, until fasthttp has
//     written it or dropped its connection (limits.write_timeout bounds a
//     client that does not read); one that does not fit is never read
//     and is answered 503 (500 past what the budget could ever hold),
//     counted (BodyCounts.AnswersRefused).
//   - Framing (framing.go): a request declaring both a chunked body and a
//     Content-Length is refused 400 from its header, connection closed.
//   - Prefix check (precheck.go): a body larger than the first 64 KiB
//     buffer is judged from that buffer by a prep worker (through the
//     Proxy, with worker.PrefixHeader) before the rest is read; a 400/413
//     is answered at once, the rest unread. It is advisory: no answer
//     within a second (or the request's deadline), or any other answer,
//     lets the body go on. Only the front sets PrefixHeader: clients'
//     are removed.
//   - Poison requests (poison.go, blame.go, poisonkey.go,
//     internal/poison): an answer marked worker.InferExitedHeader (the
//     infer worker exited on the request), or an lb failure after the
//     request reached its prep worker, counts a strike against the
//     request's route and tensors (decompressed and decoded: the key
//     ignores the encoding) if the worker crashed on its own
//     (Options.InferExited, Options.PrepExited), not if it was killed
//     from outside, and was at work on it (its run, alone, or its decode:
//     the worker's scoreboard record of the request's token,
//     worker.TokenHeader); at work beside another run it makes a suspect,
//     not at work it is sent again once; one struck
//     limits.poison_threshold times within limits.poison_ttl is refused
//     422 before the lb. The header is removed before the client sees the
//     answer. Requests are keyed only on a strike, and on arrival only
//     while their model has an entry. An answer marked worker.RunTimeoutHeader
//     (the run outlived models[].max_run_time and was stopped) is counted
//     by model, and counted against the body as a crash is. A body
//     struck below the threshold (a suspect) is sent marked
//     worker.AloneHeader, to run in a batch of its own, so that its next
//     strike is not its innocent batchmates' too. A request
//     whose client hung up (lb.ErrClientGone) is remembered, among the
//     last 256 (abandoned.go), and struck at a worker crash on its own
//     (WorkerCrashed, from the master) that was at work on it;
//     its body is decoded for its key only within limits.poison_key_rate
//     (keyrate.go), past which it is keyed by its bytes as sent (counted,
//     BodyCounts.PoisonFallbackKeys).
//   - Hang-ups (clientgone.go): while a proxied request waits on its
//     worker, the lb watches for its client's hang-up (an epoll event on
//     its socket, hangup.Peer, polled where it cannot be watched; an
//     RPC's context ending, ServeInternal's rpc through
//     lb.ContextClient) and then closes the connection to the prep
//     worker, so the request stops down to its model run rather than at
//     max_run_time. Nothing is answered; it is logged at debug with
//     status 499 and counted (BodyCounts.ClientClosed), and is neither a
//     crash nor a strike.
//   - Connections: the listener from CapConnections admits at most
//     limits.max_connections open connections (conncap.go); one over it is
//     answered 503 and closed without a goroutine. A connection keeps its
//     place until it is really closed, lingering included. After a flood
//     of connections or large bodies has gone, the memory is handed back
//     to the OS (internal/osmem, at most once per 5 s).
//
// Goroutines: fasthttp runs one goroutine per connection, which runs the
// header hook, the handler, the body read and the lb exchange of its
// requests in turn; a lingering close runs on a goroutine of its own,
// bounded as above; the OS memory release runs on a timer. The front owns
// no other goroutine: Server's caller serves it and shuts it down.
// Everything the front shares across connections is atomic (keys,
// counters, the gates) or a sync.Map (admissions); the config is read once
// per request from the Backend, so a reload applies to the next request.
//
// Pitfalls for the caller:
//   - Serve the Server on the listener CapConnections returns, or
//     max_connections is fasthttp's text/plain cap (2x) instead.
//   - SetServing(false) refuses inference from the header; keep it true
//     while draining (Drain asks clients to close instead), so requests on
//     open keep-alive connections are served, not refused.
//   - A handler panic is answered 500 and the connection closed
//     (frontpanic.go): fasthttp does not recover panics.
package front
