// Package rundir is an instance's runtime directory: the directory that
// holds its control socket, its pid file and its workers' Unix sockets.
// It knows paths and control's file names, not the master.
//
// Model: one directory per instance, shared during an upgrade by the two
// masters of that instance and by nothing else.
//
// Invariants:
//
//   - Safety. Prepare accepts only a directory (never a symlink) owned by
//     the effective uid that group and others cannot write: 0700, or 0711
//     once LetWorkersIn opened it for workers running as another user.
//     It creates a missing one 0700 whatever the umask; a master started
//     by an upgrade checks the one it inherits the same way.
//   - One live instance. Prepare refuses a directory whose control socket
//     answers, and clears the sockets and pid file a dead instance left.
//   - Who owns what. Each master's worker sockets start with SocketPrefix
//     (its pid), so two masters never collide and each Cleanup removes
//     only its own. The control socket and the pid file belong to the
//     master that serves (Own writes the pid file, without following a
//     symlink); the old master gives them up (Disown) when it hands over,
//     the new one takes them (Own) once ready; only the owner removes
//     them.
//   - What survives an upgrade: the directory, the serving master's
//     control socket and pid file, and whether this instance created the
//     directory (HandOn passes it to the new master in the environment).
//     The directory is removed by the last master to leave, and only if
//     the instance created it: Cleanup removes it only when empty.
package rundir
