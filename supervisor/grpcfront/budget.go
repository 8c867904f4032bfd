package grpcfront

// Budget is the shared bound on request bytes the master holds
// (limits.max_body_bytes_in_flight, the front's body budget), which the
// messages being received are charged to (see wire). ReserveBody takes n
// bytes, or nothing and false when they do not fit; ReleaseBody gives n
// back. ReserveAnswer and ReleaseAnswer are the same for an answer held
// until the client has read it, which may hold at most the large bodies'
// share: a client that never reads must not take the room kept for small
// request bodies.
type Budget interface {
	ReserveBody(n int64) bool
	ReleaseBody(n int64)
	ReserveAnswer(n int64) bool
	ReleaseAnswer(n int64)
}
