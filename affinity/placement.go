package affinity

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// String renders the plan as the table `supervisor check` prints: one row
// for the master's reserved CPUs, then one per worker.
//
//	WORKER   DEVICE               NODE  CPUS
//	master   -                    -     0,64
//	infer-0  GPU 0 GPU-3f2a6d1e…  0     1,65
//	prep-0   cpu                  1     36,100
func (p *Placement) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "WORKER\tDEVICE\tNODE\tCPUS")
	reserved := p.Reserved.String()
	if reserved == "" {
		reserved = "any (none reserved)"
	}
	fmt.Fprintf(w, "master\t-\t-\t%s\n", reserved)
	for _, a := range p.Workers {
		cpus := a.CPUs.String()
		if a.Shared {
			cpus += " (shared)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.Name, a.Device(), nodeString(a.NUMANode), cpus)
	}
	w.Flush()
	return b.String()
}

// Device names the worker's device: "cpu", or "GPU <index> <uuid>", the
// UUID being what the worker's CUDA_VISIBLE_DEVICES will name.
func (a Assignment) Device() string {
	if a.GPU == nil {
		return "cpu"
	}
	if a.GPU.UUID == "" {
		return fmt.Sprintf("GPU %d", a.GPU.Index)
	}
	return fmt.Sprintf("GPU %d %s", a.GPU.Index, a.GPU.UUID)
}

func nodeString(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}
