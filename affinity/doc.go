// Package affinity decides where every worker process runs and starts it
// there, the way nginx's worker_cpu_affinity auto does, but aware of GPUs
// and NUMA.
//
// The model, bottom up:
//
//   - A CPUSet is a set of CPU ids, written in the kernel's list format
//     ("0-3,8,10-11").
//   - A Topology is read from sysfs (LoadTopology; the root is a parameter
//     so tests use the fake trees under testdata/): CPUs grouped into cores
//     (hyper-thread siblings), packages and NUMA nodes. It holds only the
//     CPUs the process may run on (AllowedCPUs: taskset, cgroup cpusets),
//     so nothing planned from it is ever refused by the kernel.
//   - GPUs come from a GPULister: NVML on a GPU host (no driver means no
//     GPUs, not an error) or StaticGPUs from the config.
//     NVML.Driver reports the driver and the CUDA version it supports;
//     GPURoom says whether a second copy of a worker fits in its GPU's
//     free memory (what a surge replacement needs).
//   - Plan is a pure function from topology, GPUs and a Request to a
//     Placement: reserved CPUs for the master, then one infer worker per
//     GPU on that GPU's NUMA node, then prep workers on the rest, one core
//     each, spread over the GPUs' nodes.
//   - StartPinned starts a worker with its cpuset in force from the first
//     instruction; StartPlaced adds a NUMA memory policy (preferred or
//     bind to the worker's node), inherited the same way.
//
// Invariants of a Placement: every CPU in it is usable; explicit cpus lists
// never overlap (Plan fails with ErrOverlap instead); workers not marked
// Shared have CPUs of their own, disjoint from each other's and from the
// reserved CPUs. Plan marks a worker Shared only when the machine is too
// small for what was left automatic, never for what was asked for
// explicitly (that fails with ErrNoFit), unless Request.Overcommit allows
// it for counts and sizes. Every Plan failure is a *PlanError naming the
// part of the Request at fault (Field, Key, Worker), so callers locate it
// with errors.As, never by reading the message.
//
// The sysfs files are parsed here rather than through prometheus/procfs:
// procfs's CPU topology lists every cpuN directory instead of the online
// set, and has no NUMA node cpulist, so it would cover only half of what
// this package reads.
package affinity
