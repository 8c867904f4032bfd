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
// the request takes the lb's least-connections choice of prep worker.
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
//     capListener), the header list and the handshake time are capped;
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
//   - Messages are charged to the body budget (Options.Budget,
//     limits.max_body_bytes_in_flight) before they are read, as an HTTP
//     body's declared length is: gRPC opens a stream's window to the
//     length a message's prefix declares as soon as a handler asks for
//     it, so the connection and stream windows do not bound it, and
//     without the charge MaxRPCs x MaxMessageBytes could be in assembly
//     at once (4096 x 256 MiB = 1 TiB with the defaults). An RPC is
//     charged MaxMessageBytes at its header (a stream at each RecvMsg),
//     cut to its message's size once that is in; one the budget has no
//     room for is refused RESOURCE_EXHAUSTED, unread. Not charged: what a
//     client pushes to a stream beyond the message being read, at most
//     StreamWindowBytes each (MaxRPCs x 1 MiB = 4 GiB with the defaults).
//   - Stop drains (GracefulStop: GOAWAY, then the RPCs in flight finish)
//     until its context ends, then closes every connection and returns
//     without waiting for handlers still running (each is bounded by its
//     request's deadline).
//   - Nothing here holds a request's memory past its RPC: the HTTP request
//     and response are the RPC's own, dropped when it returns.
package grpcfront
