package status

import (
	"fmt"
	"io"
)

// writeAutoscale: the prep pool's size and the autoscaler's resizes.
// Both series are there with autoscaling off too (0 resizes), so that a
// dashboard's query does not depend on the config.
func writeAutoscale(p *promText, s Scrape) {
	prep := 0
	for _, w := range s.Status.Workers {
		if w.Role == "prep" {
			prep++
		}
	}
	p.family("supervisor_prep_workers", "gauge", "Prep worker positions (the pool's size, which the autoscaler changes between prep.min_workers and prep.max_workers)")
	p.sample("supervisor_prep_workers", float64(prep))
	var ups, downs uint64
	if a := s.Status.Autoscale; a != nil {
		ups, downs = a.Ups, a.Downs
	}
	p.family("supervisor_autoscale_events_total", "counter", "Prep pool resizes by the autoscaler, by direction, since this master started")
	p.sample("supervisor_autoscale_events_total", float64(ups), "direction", "up")
	p.sample("supervisor_autoscale_events_total", float64(downs), "direction", "down")
}

// writeAutoscaleLine writes the autoscaler's line of the text report:
// the pool's size, its bounds and the last decision with its reason.
func writeAutoscaleLine(w io.Writer, r *Report) {
	a := r.Status.Autoscale
	if a == nil {
		return
	}
	printf(w, "prep autoscale: %d workers (min %d, max %d), %d up, %d down", a.Workers, a.Min, a.Max, a.Ups, a.Downs)
	if d := a.Last; d != nil {
		printf(w, "; last %s %d -> %d, %s ago: %s", d.Direction, d.From, d.To, since(r.At, d.At), d.Reason)
		if d.Error != "" {
			printf(w, " (FAILED: %s)", d.Error)
		}
	}
	fmt.Fprintln(w)
}
