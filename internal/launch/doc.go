// Package launch runs one real `supervisor run` for a command or a test
// that drives it from outside: the conformance report (cmd/conformance)
// and the hostile-client suite (cmd/hostile).
//
// Contract:
//   - Start makes a fresh temp dir (Server.Dir), picks three free loopback
//     ports (public, metrics and gRPC), asks the caller's Options.Config
//     for the YAML text, writes it into Dir, and starts `BIN run -c CONFIG` with
//     stdout and stderr going to Server.Log inside Dir. It does not wait for
//     readiness; a failed Start leaves no dir and no process behind.
//   - Server.Exited is closed once the process has exited and been reaped;
//     Alive reports the same without blocking.
//   - WaitReady polls GET /v2/health/ready until it answers 200. Every poll
//     is bounded in time, the number of polls is bounded, and between polls
//     it waits on Exited, so a supervisor that dies is reported at once
//     (ErrExited) instead of after the whole timeout (ErrNotReady).
//   - Stop asks with SIGTERM, kills after its grace bound, waits for the
//     exit, then removes Dir (or, with Options.KeepDir, only RuntimeDir, so
//     the log and config stay for reading). Stop may be called more than
//     once.
//
// The free ports are found by binding port 0 and closing it, so another
// process may take one before the supervisor binds it; the supervisor
// then exits and WaitReady reports ErrExited. cmd/supervisor's end-to-end
// harness does not use this package: it shares one log across masters
// started by upgrades, kills those masters and their scoreboards in
// t.Cleanup, and its tests reach into the process directly.
package launch
