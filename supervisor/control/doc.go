// Package control is the contract of the master's control socket and its
// client: what `supervisor status|reload|upgrade|stop` send and receive,
// where the socket and the pid file lie in a runtime dir, and when a
// client may trust that dir. The server side is
// supervisor/controlserver, which speaks this contract.
//
// Invariants:
//   - One exchange per connection: the client writes one Request (one
//     JSON object, one line), the master answers one Response and closes.
//     Call bounds the whole exchange by its timeout.
//   - A Response with OK false carries Error; Call returns it as an error
//     (with the Response, for its Result). Nothing answering is
//     ErrNoMaster.
//   - "stop" and a successful "upgrade" are answered only once the master
//     has stopped (every worker reaped) or handed over: a client that gets
//     its answer may rely on it.
//   - A client talks only to a runtime dir that is not a symlink, is owned
//     by root or by itself and that group and others cannot write
//     (TrustedDir; ErrUnsafeRuntimeDir otherwise). The master holds its own
//     dir to the stricter CheckDir with its own uid only.
//   - The JSON field names of Status, WorkerStatus, ModelState and
//     OpResult are a wire format between two binaries of possibly
//     different versions (an upgrade runs both): add fields, never rename
//     or repurpose one.
package control
