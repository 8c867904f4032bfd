// Package plan places a config's workers on a host: the host as the
// planner sees it (Host: the CPUs this process may use, the GPUs found,
// read once by LoadHost), and Place, which turns the config's placement
// keys into affinity's request and its answer into the plan the master
// starts and `supervisor check` prints.
//
// The invariants:
//
//   - Place depends only on the config and the host: the same two give
//     the same plan.
//   - A config that does not fit is an error at the line of the key an
//     operator would change (a *config.ConfigError), never a plan with
//     overlapping CPUs.
//   - infer.gpus naming a GPU the host lacks is an error, never a silent
//     fallback to the CPU.
//   - An autoscaled prep pool must fit at prep.max_workers too
//     (CheckCeiling), so that no grow fails for want of CPUs.
package plan
