// Package prepload measures the prep stage for the autoscaler
// (supervisor/autoscale): the load is the seconds of requests spent in
// prep workers per second, from the scoreboard's latency sums, and the
// CPUs it may use are the plan's; the idle time of the CPUs a next
// worker would get comes from /proc/stat. The master asks a Meter for
// each sample, and resizes the pool itself.
//
// Invariants:
//   - A sample is a difference of two readings: the first reading, and
//     the first after a failed one, only set the baseline
//     (errFirstSample).
//   - The time spent waiting on infer workers is not the prep stage's:
//     the infer latency sum is taken off the prep one, never below 0.
//   - The CPUs of a pool count each CPU once, however many workers float
//     over it (overcommit).
package prepload
