// Package h2conn is the gRPC listener's connections, defended at the
// HTTP/2 wire below grpc-go: NewListener caps them (conncap, GOAWAY
// beyond), refuses the new ones of an address penalised for
// misbehaviour, bounds each write, and charges each message in assembly
// to a Budget as its bytes are read (Wire); a Set keeps the open ones by
// remote address, so that grpcfront's stream watchdogs can find a
// stream's connection (Of) and close it (Entry.Close).
//
// Invariants:
//   - A connection over the cap, or of a penalised address, gets the
//     server preface and a GOAWAY whose debug data says why, and is
//     closed before any of its HTTP/2 is read.
//   - A connection is struck (its address penalised, penalty.go) at most
//     once, whatever closes it for misbehaviour: rapid reset
//     (EndedEarly past EarlyEndsBurst), a ping flood (gRPC's GOAWAY
//     ENHANCE_YOUR_CALM seen on its way out), an answer not taken.
//   - A message's charge is taken by the length its prefix declares and
//     given back once: at its last byte, its stream's end (either side),
//     the server's GOAWAY past it, or the connection's close.
//   - A read that owes a charge waits for room before it reads the
//     socket, at most the Wire's wait, then fails (gRPC closes the
//     connection).
//   - Closing a connection releases every Answer it still holds; an
//     answer kept after that is refused (Keep reports false).
package h2conn
