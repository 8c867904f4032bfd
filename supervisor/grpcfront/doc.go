// Package grpcfront serves KServe V2 over gRPC (inference.GRPCInferenceService,
// Triton's protocol, generated in internal/inferencepb) by turning every
// RPC into the V2 HTTP request that answers it and handing that request,
// with the RPC's context, to the master's Handler: there is no second way
// to the workers. ModelInfer (and each ModelStreamInfer request) becomes
// POST .../infer with the binary tensor data extension; the other RPCs
// become the GET or POST of their HTTP route (service.go, repository.go,
// health.go). The RPC's deadline becomes X-Request-Timeout; once its
// context ends the Handler may abandon the request.
//
// Admission is the consumer's: Options.Admit refuses an inference RPC
// from its header before its message is read, and Options.Budget (the
// public front's body budget, an internal/budget) is charged the
// messages, the metadata and the answers: each an internal/budget
// Charge, released once, whoever releases it.
//
// Invariants:
//   - An answer other than 200 becomes a gRPC status with the V2 error
//     message (code.go).
//   - A hostile client is bounded like an HTTP one: connections (conncap,
//     GOAWAY beyond), streams per connection, RPCs across them, the
//     header list, the handshake, each wait of a stream on its client
//     (Timeouts, watchdog.go), rapid resets and ping floods (the address
//     penalised); flow-control windows are fixed. The connection-level
//     defences live in h2conn.
//   - A message in assembly is charged to Budget by the length its prefix
//     declares, from the prefix to its last byte (h2conn.Wire); a connection
//     whose next message has no room is not read until it has, for at
//     most Timeouts.Message; the messages waiting take turns across
//     connections (Budget.WaitBody), the first large one owed the room
//     given back first.
//   - A message that would decode to more than MaxMessageBytes is refused
//     before it is decoded (decodecap.go).
//   - An infer answer over 64 KiB is charged to Budget until gRPC is done
//     with its bytes (answerhold.go); every answer not written within
//     Timeouts.Write closes its connection (answerbound.go).
//   - Stop drains until its context ends, then closes every connection
//     without waiting for handlers still running.
//
// Size: about 2,650 non-test lines, over the 2,500 a package should stay
// under. What is left is one RPC-to-V2 translation per service method
// plus the per-stream state they share (exchange, watchdog, held
// answers and requests, the pooled bodies issue 33 added), which reach
// into one another's unexported fields on every RPC's hot path; the
// connection defences (h2conn) and the decode weighing (decodecost)
// have already left. The next split is the stream watchdog and answer
// bounds (watchdog.go, answerbound.go) behind a small per-stream
// interface.
package grpcfront
