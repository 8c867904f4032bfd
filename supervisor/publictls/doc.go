// Package publictls is the TLS of the master's public listeners, HTTP
// and gRPC (config tls), over internal/servertls: Load at start,
// Reload's apply on a reload that keeps it on, HTTP and GRPC to wrap
// each listener.
//
// Invariants:
//   - A reload's certificates are loaded before anything changes, and
//     apply to new connections only; open ones keep theirs.
//   - TLS is on or off for the master's life: a reload that turns it on
//     or off is refused (Reloadable), since the listeners wrap their
//     connections from startup.
//   - A nil *Listeners is TLS off: it wraps nothing.
package publictls
