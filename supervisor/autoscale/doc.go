// Package autoscale sizes the prep pool: it samples the prep stage at an
// interval, decides from a window of samples whether to add or remove one
// prep worker, and asks its Pool to resize. It decides; the master
// (supervisor/) measures and resizes, through the two interfaces declared
// here (Sampler, Pool), so the rules are tested with fake samples.
//
// The signal. A sample holds the prep stage's load: the average number of
// requests in the prep stage over the interval, by Little's law the time
// the requests that finished spent in prep workers (the scoreboard's prep
// latency sum) less the time they spent in infer workers (the infer
// latency sum), divided by the interval. Divided by the CPUs the prep
// pool runs on, it is the busy fraction: at 1 or more, every prep CPU has
// a request on it or waiting for it. That is "prep is the bottleneck":
// when the infer stage (or the GPU) limits throughput, requests wait in
// infer workers, their time is subtracted, and the prep load stays low
// however busy the service is, so the autoscaler does not add CPU workers
// that would not help. The lb does not queue (least connections hands a
// request to a prep worker at once), so queuing shows here, as requests
// waiting inside prep workers.
//
// A sample also holds how many CPUs' worth of the CPUs the next worker
// would be placed on were idle over the interval (/proc/stat): a new
// worker on CPUs that are already busy would only take time from what
// runs there.
//
// The rules (Decider):
//   - Grow by one when the pool is below max, every sample of the up
//     window is busy at or above UpBusy and shows at least MinIdleCPUs idle
//     for the new worker.
//   - Shrink by one when the pool is above min and every sample of the
//     (longer) down window would be below DownBusy on one worker fewer:
//     the load over the CPUs that would remain. DownBusy < UpBusy, and
//     the projection onto one worker fewer, keep a shrink from causing
//     the next grow (hysteresis).
//   - After a decision nothing is decided for Cooldown, and the window
//     starts again: samples taken with another pool size say nothing
//     about this one.
//   - A failed sample (the board unreadable) clears the window.
//
// The Scaler is one goroutine (Run) that samples at the interval the
// policy says, decides and resizes; the master pauses it during reloads,
// upgrades and stop (Pool.Resize refuses, and the refusal is not a
// decision). Every decision is logged with its reason, the signal
// values, and kept for status (Scaler.State).
package autoscale
