package status

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Report is what `supervisor status` prints and /status shows: the
// master's own view (Status, from the control socket) joined with the
// scoreboard's per-process counters, the processes' memory and CPU, and
// the GPUs. Its JSON (`status --json`) holds every Status field at the top
// level, so older readers of Status still decode it.
type Report struct {
	control.Status
	// Source says where the report came from: "control+scoreboard", or
	// "scoreboard" when the control socket did not answer (ControlError
	// says why; Status then holds what the board's header tells).
	Source       string `json:"source"`
	ControlError string `json:"control_error,omitempty"`
	Scoreboard   string `json:"scoreboard,omitempty"`
	// At is when the report was taken.
	At        time.Time     `json:"at"`
	Processes []ProcessRow  `json:"processes"`
	Pools     []PoolSummary `json:"pools"`
	GPUs      []GPUSummary  `json:"gpus"`
	// Bottleneck names the saturated stage, or says none is.
	Bottleneck string `json:"bottleneck"`
}

// ProcessRow is one worker process, from its scoreboard slot.
type ProcessRow struct {
	Slot       int    `json:"slot"`
	Name       string `json:"name"`
	Role       string `json:"role"`
	Generation uint64 `json:"generation"`
	PID        int    `json:"pid"`
	Device     string `json:"device"`
	CPUs       string `json:"cpus"`
	State      string `json:"state"`
	// Stale: the process is gone, or serves an older generation (a
	// replaced worker still draining).
	Stale      bool    `json:"stale"`
	UptimeS    float64 `json:"uptime_s"` // since ready; 0 while starting
	Requests   uint64  `json:"requests"`
	InFlight   int64   `json:"in_flight"`
	Queue      int64   `json:"queue"`
	Errors     uint64  `json:"errors"`
	RSSBytes   uint64  `json:"rss_bytes"`
	CPUPercent float64 `json:"cpu_percent"`
	// RecycleAt is the request count that recycles the worker (0 never);
	// RecycleIn the requests left until then.
	RecycleAt uint64 `json:"recycle_at,omitempty"`
	RecycleIn uint64 `json:"recycle_in,omitempty"`
	// LatencyP99S is the 99th percentile of its request latencies since
	// it started, in seconds (bucket upper bound).
	LatencyP99S float64 `json:"latency_p99_s"`
	// HeartbeatAgeS is how long ago the worker last reported, in seconds.
	HeartbeatAgeS float64 `json:"heartbeat_age_s"`
	Restarts      int     `json:"restarts"`
	Recycles      int     `json:"recycles"`
	// Arena is a prep worker's shared-memory arena; absent without one.
	Arena *ArenaRow `json:"arena,omitempty"`
}

// PoolSummary sums a pool's live processes.
type PoolSummary struct {
	Role       string  `json:"role"`
	Processes  int     `json:"processes"`
	Ready      int     `json:"ready"`
	Requests   uint64  `json:"requests"`
	InFlight   int64   `json:"in_flight"`
	Queue      int64   `json:"queue"`
	Errors     uint64  `json:"errors"`
	RSSBytes   uint64  `json:"rss_bytes"`
	CPUPercent float64 `json:"cpu_percent"`
	// CPUs is how many CPUs the pool's processes may use between them
	// (their affinity lists); 0 when unknown.
	CPUs int `json:"cpus"`
}

// GPUSummary is one device's load (NVML); empty on hosts without GPUs.
type GPUSummary struct {
	Index              int    `json:"index"`
	UUID               string `json:"uuid"`
	Name               string `json:"name"`
	UtilizationPercent uint32 `json:"utilization_percent"`
	MemoryUsedBytes    uint64 `json:"memory_used_bytes"`
	MemoryTotalBytes   uint64 `json:"memory_total_bytes"`
}

// reportInput is what a report is built from.
type reportInput struct {
	status  control.Status
	header  shm.Header
	slots   []shm.SlotSnapshot
	procs   map[int]procSample
	gpus    []affinity.GPUUsage
	now     time.Time
	boardOK bool
}

// OfMaster is the master's Report of itself (/status, /status.json): st
// and its board's snapshot (h, slots), each process's CPU% measured by cpu
// since its last call, and the GPUs' usage.
func OfMaster(st control.Status, h shm.Header, slots []shm.SlotSnapshot, gpus []affinity.GPUUsage, cpu *CPUSampler) *Report {
	return buildReport(reportInput{status: st, header: h, slots: slots, procs: cpu.sample(slotPIDs(slots)),
		gpus: gpus, now: time.Now()})
}

// buildReport joins the inputs into a Report.
func buildReport(in reportInput) *Report {
	r := &Report{Status: in.status, At: in.now, Processes: []ProcessRow{}, Pools: []PoolSummary{}, GPUs: []GPUSummary{}}
	byPID := map[int]control.WorkerStatus{}
	for _, w := range in.status.Workers {
		if w.PID > 0 {
			byPID[w.PID] = w
		}
	}
	for _, s := range in.slots {
		if s.State == shm.Free || s.State == shm.Dead || s.Torn {
			continue
		}
		r.Processes = append(r.Processes, processRow(s, in, byPID[s.PID]))
	}
	slices.SortStableFunc(r.Processes, func(a, b ProcessRow) int {
		if c := strings.Compare(roleOrder(a.Role), roleOrder(b.Role)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	r.Pools = summarize(r.Processes)
	for _, g := range in.gpus {
		r.GPUs = append(r.GPUs, GPUSummary{Index: g.Index, UUID: g.UUID, Name: g.Name, UtilizationPercent: g.UtilizationPercent,
			MemoryUsedBytes: g.MemoryUsedBytes, MemoryTotalBytes: g.MemoryTotalBytes})
	}
	r.Bottleneck = bottleneck(r.Pools, r.GPUs)
	if b := arenaBottleneck(r.Processes); b != "" {
		r.Bottleneck = b
	}
	return r
}

func roleOrder(role string) string {
	if role == "prep" {
		return "0"
	}
	return "1" + role
}

func processRow(s shm.SlotSnapshot, in reportInput, ws control.WorkerStatus) ProcessRow {
	ps := in.procs[s.PID]
	row := ProcessRow{
		Slot: s.Index, Name: s.Name, Role: s.Role, Generation: s.Generation, PID: s.PID,
		Device: s.Device, CPUs: s.CPUs, State: s.State.String(), Stale: s.Stale(in.header),
		Requests: s.Requests, InFlight: s.InFlight, Queue: s.QueueDepth, Errors: s.Errors,
		RSSBytes: ps.RSS, CPUPercent: ps.CPUPercent, RecycleAt: s.RecycleAfter,
		LatencyP99S: quantile(s.Latency, 0.99), Restarts: ws.Restarts, Recycles: ws.Recycles,
	}
	if row.CPUs == "" {
		row.CPUs = ps.CPUs
	}
	row.Arena = arenaRow(s, in.now)
	if !s.Ready.IsZero() {
		row.UptimeS = in.now.Sub(s.Ready).Seconds()
	}
	if !s.Heartbeat.IsZero() {
		row.HeartbeatAgeS = max(0, in.now.Sub(s.Heartbeat).Seconds())
	}
	if s.RecycleAfter > s.Requests {
		row.RecycleIn = s.RecycleAfter - s.Requests
	}
	if row.Stale && s.PID > 0 && !shm.ProcessExists(s.PID) {
		row.State = "gone"
	}
	return row
}

// summarize sums the rows per pool, prep first.
func summarize(rows []ProcessRow) []PoolSummary {
	var pools []PoolSummary
	index := map[string]int{}
	for _, row := range rows {
		i, ok := index[row.Role]
		if !ok {
			i = len(pools)
			index[row.Role] = i
			pools = append(pools, PoolSummary{Role: row.Role})
		}
		p := &pools[i]
		p.Processes++
		if row.State == shm.Ready.String() {
			p.Ready++
		}
		p.Requests += row.Requests
		p.InFlight += row.InFlight
		p.Queue += row.Queue
		p.Errors += row.Errors
		p.RSSBytes += row.RSSBytes
		p.CPUPercent += row.CPUPercent
		p.CPUs += cpuCount(row.CPUs)
	}
	return pools
}

// Saturation thresholds for naming the bottleneck.
const (
	busyCPUPercent = 85 // of the CPUs a pool may use
	busyGPUPercent = 90
)

// bottleneck names the stage that limits throughput now, following the
// sizing law: throughput is capped by whichever of the CPU stage (prep),
// the inference stage (its queue) and the GPUs saturates first.
func bottleneck(pools []PoolSummary, gpus []GPUSummary) string {
	type stage struct {
		score float64 // >= 1: saturated
		why   string
	}
	var stages []stage
	for _, p := range pools {
		if p.Ready == 0 {
			continue
		}
		if p.Role == "infer" && p.Queue > 0 {
			stages = append(stages, stage{float64(p.Queue) / float64(p.Ready),
				fmt.Sprintf("infer: %d requests queued across %d infer workers (add infer workers or GPUs, or turn batching on)", p.Queue, p.Ready)})
		}
		// Unpinned workers each list every CPU: the host bounds the sum.
		if cpus := max(min(p.CPUs, runtime.NumCPU()), 1); p.CPUPercent > 0 {
			share := p.CPUPercent / float64(cpus)
			stages = append(stages, stage{share / busyCPUPercent,
				fmt.Sprintf("%s: its workers use %.0f%% of their %d CPUs (add %s workers or CPUs)", p.Role, share, cpus, p.Role)})
		}
	}
	for _, g := range gpus {
		stages = append(stages, stage{float64(g.UtilizationPercent) / busyGPUPercent,
			fmt.Sprintf("gpu %d: %d%% utilised (add GPUs, or batch more per run)", g.Index, g.UtilizationPercent)})
	}
	best := stage{}
	for _, s := range stages {
		if s.score > best.score {
			best = s
		}
	}
	if best.score < 1 {
		return "none: no stage is saturated"
	}
	return best.why
}

// quantile returns the upper bound of the bucket holding quantile q of h
// (the overflow bucket reports the largest bound); 0 without observations.
func quantile(h shm.Histogram, q float64) float64 {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = max(rank, 1)
	var c uint64
	for i, k := range h.Counts {
		c += k
		if c >= rank {
			if i < len(h.Bounds) {
				return h.Bounds[i]
			}
			break
		}
	}
	return h.Bounds[len(h.Bounds)-1]
}
