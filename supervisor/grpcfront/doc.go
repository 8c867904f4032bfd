// Package grpcfront serves KServe V2 over gRPC (inference.GRPCInferenceService,
// Triton's protocol, generated in internal/inferencepb) by turning every RPC
// into the V2 HTTP request that answers it and handing that request to the
// master's Handler: there is no second way to the workers.
//
//   - ServerLive, ServerReady: GET /v2/health/live, /v2/health/ready.
//   - ModelReady, ModelMetadata: GET /v2/models/{m}[/versions/{v}][/ready].
//   - ServerMetadata: GET /v2.
//   - ModelStatistics: GET /v2/models/{m}[/versions/{v}]/stats, or
//     /v2/models/stats for every model.
//   - ModelConfig: GET /v2/models/{m}[/versions/{v}]/config, whose JSON is
//     ModelConfig's protojson form.
//   - RepositoryIndex, RepositoryModelLoad, RepositoryModelUnload: POST
//     /v2/repository/index and /v2/repository/models/{m}/load or /unload,
//     with the RPC's ready flag or parameters as the JSON body; a
//     repository_name is UNIMPLEMENTED (there is one repository).
//   - ModelInfer (and each request of ModelStreamInfer): POST
//     /v2/models/{m}[/versions/{v}]/infer with the binary tensor data
//     extension: a JSON header (Inference-Header-Content-Length) followed
//     by every input's bytes, raw_input_contents as they are and typed
//     contents packed little-endian (BYTES as 4-byte length + bytes, as
//     raw_input_contents carry them). Every output is asked for as binary
//     data, and the answer's bytes become raw_output_contents.
//
// The Handler (the master's) applies the public listener's admission to
// the request: the API key from the authorization or x-api-key metadata,
// the key's rate, readiness, max_body_bytes, max_in_flight and the body
// budget; the RPC's deadline becomes X-Request-Timeout, so it bounds the
// lb's call and the infer worker's queue as a client's header would. Then
// the request takes the lb's least-connections choice of prep worker. The
// Handler is given the RPC's context (Handler): once it ends (the
// client cancelled, its connection died) the master abandons the worker
// exchange, which stops the run, as a public client's hang-up does.
//
// Invariants:
//   - An answer other than 200 becomes a gRPC status, with the V2 error
//     message (see Code): 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 404
//     NOT_FOUND, 403 PERMISSION_DENIED (a repository load or unload with
//     model_control none, where Triton answers UNAVAILABLE: no retry gets
//     past it, and gRPC retry policies retry UNAVAILABLE), 503 with
//     Retry-After (a full queue, arena, max_in_flight, the body budget)
//     and 429 RESOURCE_EXHAUSTED, other 503s (not ready, draining, no
//     worker) UNAVAILABLE, 504 or a passed deadline DEADLINE_EXCEEDED.
//   - A hostile client is bounded like an HTTP one: an inference RPC is
//     refused from its header (Options.Admit: no valid key, not serving,
//     max_in_flight reached) before its message is read; a message over
//     Options.MaxMessageBytes is refused by gRPC from its prefix, before
//     it is read; streams per connection, connections (GOAWAY beyond,
//     conncap), the header list and the handshake time are capped
//     (and what an RPC's metadata holds decoded past 4 KiB is charged
//     to Options.Budget until it ends: metadataCost);
//     every wait of a stream on its client is bounded (Timeouts: the
//     message, an idle stream, an answer not taken, a socket not read);
//     a connection ending too many streams before their first message
//     (HTTP/2 rapid reset) is closed, and its address (as that of one
//     closed for too many pings or an answer not taken) then gets new
//     connections only at a small rate (Options.AbusePenalty, penaltyBox),
//     refused at accept so that redialling costs the master nothing
//     more; flow-control windows are fixed;
//     keepalive pings more often than MinPingInterval, or with no RPC
//     open, get GOAWAY. cmd/hostile attacks each of these.
//   - Messages in assembly are charged to the body budget (Options.Budget,
//     limits.max_body_bytes_in_flight) by the length their 5-byte prefix
//     declares, from the moment the prefix arrives on the wire to the
//     message's last byte, as an HTTP body is by its Content-Length (see
//     wire: the connection's bytes are scanned as gRPC reads them). gRPC
//     opens a stream's window to that length once a handler asks for
//     the message, so no window bounds it; without the charge
//     MaxRPCs x MaxMessageBytes could be in assembly at once (4096 x
//     64 MiB = 256 GiB with the defaults). A message has no room: the
//     bytes already read go on to gRPC (so a stream it refuses at its
//     header, Admit's or MaxRPCs', ends its debt and holds nothing), and
//     its connection is not read again (TCP and HTTP/2 flow control push
//     back on that client alone) until it has, for at most
//     Timeouts.Message, then closed, giving back all it held. The
//     large messages waiting take turns across connections (waitLine):
//     the first is owed the room it lacks, which no other message or
//     body may take, and gets the room given back first (ClaimBudget),
//     so a stream of smaller messages or HTTP bodies does not starve
//     it; the eighth kept for small bodies stays theirs. Nothing
//     is refused, and a stream waiting for its next message, or a
//     message declaring 0 bytes (health probes), holds nothing; nor does
//     a stream past the last one a draining connection's GOAWAY keeps
//     (gRPC ignores it without a word). The wait holds up the
//     connection's other streams with it: messages interleaved on one
//     connection past the budget all end at Timeouts.Message.
//   - So the bytes the master holds of messages are: in assembly, at
//     most the budget (large ones seven eighths of it); beyond it, per
//     stream at most StreamWindowBytes its handler has not asked for
//     (whole messages queued behind a busy handler, the start of one
//     over MaxMessageBytes, bytes sent after its stream ended):
//     MaxRPCs x 1 MiB = 4 GiB with the defaults; and a message once
//     whole, decoded on the handler's goroutine and turned into the HTTP
//     request, which ServeInternal charges as a body (its Content-Length)
//     until the RPC ends, the decoded message held beside it, uncharged:
//     at most the bodies charged, plus the ones being refused, and at
//     most MaxMessageBytes each: a ModelInferRequest that would decode
//     to more (packed typed contents, empty repeated entries: up to 16
//     times the message, counting the body) is refused INTERNAL before
//     it is decoded (decodeCap, gRPC's codec, weighs it on the wire).
//   - A connection waiting for room delays only itself: its pings,
//     SETTINGS and WINDOW_UPDATEs (the client's, for our answers) wait
//     unread, so its answers may stop on flow control (Timeouts.Write
//     closes it) and a server ping goes unanswered (cut after 20s); the
//     wait is bounded by Timeouts.Message either way. Connections that
//     wait on each other (each holding messages whose remaining bytes
//     are behind the prefix it waits on, as a client multiplexing more
//     large messages than the budget has room for does to itself) are
//     freed when the first wait runs out and its connection closes. A
//     unary RPC whose own message waits is ended by its message timeout
//     first: the connection is then read on.
//   - Stop drains (GracefulStop: GOAWAY, then the RPCs in flight finish)
//     until its context ends, then closes every connection and returns
//     without waiting for handlers still running (each is bounded by its
//     request's deadline).
//   - An infer answer over 64 KiB (the HTTP front's bound) is charged to
//     the body budget from ServeInternal's return (its request's body
//     given back) until gRPC is done with its bytes: written, dropped
//     with its stream, or with its connection (see answerhold.go). gRPC
//     sends a unary answer after its handler returns and ends the RPC
//     for the handler once it is queued, so without the charge a
//     client giving no window held max_concurrent_streams answers a
//     connection, each up to hundreds of MB, uncharged and for ever.
//     The answer is not copied: the codec (answerCodec) encodes the
//     message around slices of the HTTP body, and the charge goes back
//     when gRPC frees the last of them, or when the connection closes
//     (grpc-go frees nothing still queued then). An answer with no room
//     is RESOURCE_EXHAUSTED (limits.max_body_bytes_in_flight); one not
//     written within Timeouts.Write of being queued closes its
//     connection.
//   - Every other answer, unary or streamed, is not charged but has the
//     same bound (answerbound.go): not written within Timeouts.Write of
//     being encoded, it closes its connection. Without it a unary
//     answer of 64 KiB or less, queued behind a window that never
//     opens, held its stream and its bytes for as long as the
//     connection lived. No compressor is registered, so gRPC never copies an
//     answer into a compressed one (that copy would be uncharged).
//   - Nothing else here holds a request's memory past its RPC: the HTTP
//     request and response are the RPC's own, dropped when it returns.
package grpcfront
