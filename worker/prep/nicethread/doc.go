// Package nicethread runs a function on an OS thread of its own at a
// lower CPU priority (Nice nicer than the worker), so that the CPU that
// large decodes and inflations share goes first to small decodes, to the
// worker's other requests and to the rest of the host.
//
// The invariants:
//
//   - Only the function's own thread is niced; the worker's other threads
//     keep their priority.
//   - The thread is never handed back to the Go scheduler: it dies with
//     its goroutine, so no niced thread runs other goroutines later.
package nicethread
