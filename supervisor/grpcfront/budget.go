package grpcfront

// Budget is the shared bound on request bytes the master holds
// (limits.max_body_bytes_in_flight, the front's body budget), which the
// messages being received are charged to (see wire). ReserveBody takes n
// bytes, or nothing and false when they do not fit; ReleaseBody gives n
// back.
type Budget interface {
	ReserveBody(n int64) bool
	ReleaseBody(n int64)
}
