package status

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// WriteText writes the report as `supervisor status` prints it: the
// master, the workers last replaced drain-first, the last reload and upgrade, one row per worker process, a
// summary per pool and per GPU, and the bottleneck.
func (r *Report) WriteText(w io.Writer) {
	st := r.Status
	state := "not ready"
	switch {
	case st.Stopping != "":
		state = "stopping (" + st.Stopping + ")"
	case st.Ready:
		state = "ready"
	}
	if r.ControlError != "" {
		state = "not answering on the control socket (from the scoreboard only)"
	}
	printf(w, "master pid %d (%s), %s, listening on %s, up %s, generation %d\n", st.PID, st.Version, state,
		orDash(st.Listen), since(r.At, st.Started), st.Generation)
	if st.ScoreboardError != "" {
		printf(w, "SCOREBOARD DAMAGED %d time(s), recreated; last: %s\n", st.ScoreboardFaults, st.ScoreboardError)
	}
	for _, msg := range st.Warnings {
		printf(w, "WARNING: %s\n", msg)
	}
	if len(st.Degraded) > 0 {
		printf(w, "DEGRADED (boots keep failing): %s\n", strings.Join(st.Degraded, ", "))
	}
	for _, ws := range st.Workers {
		if rp := ws.LastReplacement; rp != nil && rp.Mode == control.ReplaceDrainFirst {
			printf(w, "%s: last replaced drain-first %s ago (%s): its GPU had no memory for both (%s)\n",
				ws.Name, since(r.At, rp.At), rp.Reason, rp.Why)
		}
	}
	for _, ms := range st.Models {
		switch {
		case !ms.Ready:
			printf(w, "MODEL UNAVAILABLE %s: %s\n", ms.Name, ms.Why())
		case ms.Identity != "":
			printf(w, "model %s: %s\n", ms.Name, ms.Identity)
		}
		if ms.Ready && ms.Warning != "" {
			printf(w, "MODEL WARNING %s (it serves): %s\n", ms.Name, ms.Warning)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.Quarantined)) {
		printf(w, "POISON %s: %d request bodies refused 422 for crashing its infer worker (limits.poison_ttl)\n",
			name, st.Quarantined[name])
	}
	for _, name := range slices.Sorted(maps.Keys(st.RunTimeouts)) {
		printf(w, "RUN TIMEOUTS %s: %d requests answered 500: their run outlived max_run_time and was stopped\n",
			name, st.RunTimeouts[name])
	}
	if line := repositoryLine(st.RepositoryAPI); line != "" {
		printf(w, "%s\n", line)
	}
	for _, op := range []*control.OpResult{st.LastReload, st.LastUpgrade} {
		if op != nil {
			outcome := "ok"
			if !op.OK {
				outcome = "FAILED: " + op.Error
			}
			printf(w, "last %s: %s, %s ago (took %s)\n", op.Op, outcome, since(r.At, op.At), op.Took)
		}
	}
	writeAutoscaleLine(w, r)
	fmt.Fprintln(w)
	r.writeProcesses(w)
	r.writeArenas(w)
	fmt.Fprintln(w)
	r.writePools(w)
	printf(w, "\nbottleneck: %s\n", r.Bottleneck)
}

func (r *Report) writeProcesses(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GEN\tROLE\tWORKER\tPID\tDEVICE\tCPUS\tSTATE\tUPTIME\tREQS\tINFL\tQUEUE\tERRS\tRSS\tCPU%\tP99\tRESTARTS\tRECYCLE IN")
	for _, p := range r.Processes {
		state := p.State
		if p.Stale && state != "gone" {
			state += " (old gen)"
		}
		printf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%.0f\t%s\t%d\t%s\n",
			p.Generation, p.Role, p.Name, p.PID, orDash(p.Device), orDash(p.CPUs), state,
			seconds(p.UptimeS), p.Requests, p.InFlight, p.Queue, p.Errors, bytesIEC(p.RSSBytes), p.CPUPercent,
			latency(p.LatencyP99S), p.Restarts, recycleIn(p))
	}
	tw.Flush()
}

func (r *Report) writePools(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tPROCS\tREADY\tREQS\tINFL\tQUEUE\tERRS\tRSS\tCPU%")
	for _, p := range r.Pools {
		printf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%.0f\n", p.Role, p.Processes, p.Ready, p.Requests, p.InFlight,
			p.Queue, p.Errors, bytesIEC(p.RSSBytes), p.CPUPercent)
	}
	tw.Flush()
	if len(r.GPUs) == 0 {
		fmt.Fprintln(w, "\nGPUs: none (no NVML on this host)")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nGPU\tNAME\tUTIL%\tMEMORY")
	for _, g := range r.GPUs {
		printf(tw, "%d\t%s\t%d\t%s / %s\n", g.Index, g.Name, g.UtilizationPercent, bytesIEC(g.MemoryUsedBytes), bytesIEC(g.MemoryTotalBytes))
	}
	tw.Flush()
}

func recycleIn(p ProcessRow) string {
	if p.RecycleAt == 0 {
		return "-"
	}
	return fmt.Sprintf("%d reqs", p.RecycleIn)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Truncate(time.Second).String()
}

func seconds(s float64) string {
	if s <= 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Truncate(time.Second).String()
}

func latency(s float64) string {
	if s <= 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).String()
}

// bytesIEC renders a byte count with a binary unit: "512MiB".
func bytesIEC(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// repositoryLine lists what the repository API changed over the config
// file ("" when nothing), sorted by model.
func repositoryLine(api map[string]string) string {
	if len(api) == 0 {
		return ""
	}
	names := make([]string, 0, len(api))
	for name := range api {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		names[i] = name + " (" + api[name] + ")"
	}
	return "repository API over the config file: " + strings.Join(names, ", ")
}
