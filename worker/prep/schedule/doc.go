// Package schedule passes a V2 request's scheduling to the infer worker
// as headers (worker.DeadlineHeader, PriorityHeader, and the master's
// AloneHeader and TokenHeader), and reads the client's deadline the
// master passed on (ClientBudget).
//
// The invariants:
//
//   - The deadline sent is the earliest of the prep worker's upstream
//     timeout, the client's deadline and the request's own timeout; Set
//     returns the bound without the request's timeout, for the caller's
//     wait.
//   - The master's headers are passed on unchanged, never made up.
package schedule
