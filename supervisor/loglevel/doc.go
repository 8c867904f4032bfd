// Package loglevel is the master's log level at run time: the logging
// extension's GET and POST /v2/logging (front.Logging, through
// supervisor/logsettings) and a reload's log_level, applied to the master
// (zerolog's global level) and, through the scoreboard, to every worker.
//
// The invariants:
//
//   - One level for the whole instance: the master sets it and records it
//     in the scoreboard's header, which workers follow and workers spawned
//     later start at.
//   - A level set through the API lasts until a reload that changes
//     log_level, or until the master restarts or upgrades.
//   - Read-modify-write POSTs are serialised: two at once never lose one.
package loglevel
