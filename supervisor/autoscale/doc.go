// Package autoscale sizes the prep pool: a Scaler samples the prep stage
// at an interval, its Decider decides from a window of samples whether to
// add or remove one prep worker, and it asks its Pool to resize. It only
// decides; the master measures and resizes through the two interfaces
// declared here (Sampler, Pool), so the rules are tested with fake samples.
//
// Invariants:
//
//   - The signal is the busy fraction: the prep stage's load (Sample.Load)
//     per CPU of the prep pool; at 1 or more every prep CPU is taken.
//   - Grow by one only below max, when every sample of the up window is
//     at or above UpBusy with at least MinIdleCPUs idle for the new worker.
//   - Shrink by one only above min, when every sample of the longer down
//     window would be below DownBusy on one worker fewer. DownBusy <
//     UpBusy and that projection keep a shrink from causing the next grow.
//   - After a decision nothing is decided for Cooldown, and the window
//     starts again: samples at another pool size say nothing of this one.
//     A failed sample clears the window too.
//   - One goroutine (Scaler.Run) samples, decides and resizes. A refused
//     resize (ErrPaused: a reload, upgrade or stop is running) is not a
//     decision.
//   - Every decision is logged with its reason and signal values and kept
//     for status (Scaler.State).
//
// The settings and what operators see: docs/configuration.md ("Prep
// autoscaling").
package autoscale
