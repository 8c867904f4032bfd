package status

import (
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
)

// Chart geometry: one point every ChartStep, chartPoints kept.
const (
	ChartStep   = 5 * time.Second
	chartPoints = 60
)

// RatePoint is the prep pool's counters at one instant.
type RatePoint struct {
	At               time.Time
	Requests, Errors uint64
	Latency          shm.Histogram
}

// RateHistory is a ring of the last chartPoints rate points.
type RateHistory struct {
	mu  sync.Mutex
	pts []RatePoint
}

// NewRateHistory returns an empty history.
func NewRateHistory() *RateHistory { return &RateHistory{} }

// Add records p, keeping the last chartPoints.
func (h *RateHistory) Add(p RatePoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pts = append(h.pts, p)
	if len(h.pts) > chartPoints+1 {
		h.pts = h.pts[len(h.pts)-chartPoints-1:]
	}
}

// Points are the kept points, oldest first.
func (h *RateHistory) Points() []RatePoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]RatePoint(nil), h.pts...)
}
