// Package controlserver is the master's side of the control socket
// (supervisor/control is the contract and the client): it secures the
// socket, checks each peer, reads one request, and asks the master,
// through the Master interface, for status, a reload, an upgrade or a
// stop.
//
// The invariants:
//
//   - The socket is 0600, or 0660 owned by control_group: never
//     world-accessible. Each peer's credentials (SO_PEERCRED) are checked
//     too: root, the master's user, members of control_group.
//   - A refused peer's request is read before it is answered, so it sees
//     the reason, not a reset.
//   - "stop" and a successful "upgrade" are answered only at Finish, once
//     the master has stopped or handed over; Close leaves those clients
//     waiting for it.
package controlserver
