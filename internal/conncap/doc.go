// Package conncap caps a listener's open connections, answering each
// connection over the cap at once with the listener's own refusal (the
// public listener's V2 503, the gRPC listener's GOAWAY) and closing it,
// rather than leaving it in the listen backlog (netutil.LimitListener's
// way), where a new well-behaved client would wait unanswered behind an
// attacker's idle connections.
//
// Invariants:
//   - A refused connection costs one accept, one small write into an
//     empty socket buffer (bounded by RefusalWriteTimeout) and a close:
//     nothing is read from it and no goroutine is started.
//   - An admitted connection (Conn) holds its place until its first
//     Close, which gives it back exactly once.
//   - There is one capped listener: each user adds its own admission
//     (Listener.Admit: the gRPC penalty box) and its own connection type
//     (Listener.Wrap: lingering close, write deadlines) by hooks, its
//     type embedding Conn, whose Close stays the one place the place is
//     given back.
package conncap
