package decodegate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/imageprep"
	"github.com/supervisor-dev/supervisor/internal/osmem"
	"github.com/supervisor-dev/supervisor/worker"
)

// Gate decides when one prep worker decodes each image, weighing
// every decode by its cost: the memory it holds, which Inspect reads from
// the image's header (imageprep.Header.DecodeBytes). Its aims: the memory
// decodes hold at once never exceeds the worker's budget; a small image
// (a photo) never waits behind large ones; a wait ends when the client
// goes; and an image that could never fit is refused at once.
//
// The design is two lanes:
//
//   - Small decodes, costing at most small bytes, take one of places
//     places (GOMAXPROCS: decoding is CPU-bound, so more at once would
//     only share the CPUs more thinly), first come first served, and
//     never wait for a large decode. They hold at most places × small
//     bytes.
//   - Large decodes share the rest of the budget, budget − places ×
//     small bytes, also at most places at once, strictly first come first
//     served: a large decode waits until those before it have entered and
//     its cost fits beside the large decodes running, so a big one is not
//     overtaken for ever by smaller large ones. An image costing more than
//     that rest could never enter and is refused before it queues.
//
// So decode memory ≤ budget, and a small decode waits only for other
// small decodes, of which at most places run. The price is that CPUs may
// be shared by up to 2 × places decodes (a small decode beside a large
// one), which is what lets a photo through while a huge image decodes:
// one shared lane, however weighted, makes the photo wait for a place a
// huge decode holds for seconds. Simpler alternatives fall short: a
// byte-weighted semaphore alone bounds memory but queues the photo behind
// huge decodes; a count alone (the old gate) bounds memory only by places
// × the costliest image, and queues the photo the same. Large decodes
// also run at a lower CPU priority (worker/prep/nicethread), on Go Ps of their own
// (the worker runs 2 × places Ps), so that the CPU they share goes first
// to small decodes, to this worker's other requests and to the rest of
// the host's.
//
// A wait ends when the decode enters, or when its stop check says the client
// has gone (its deadline passed, or the master hung up; asked every
// budget.Poll), so no wait outlives the request. The budget counts decoding's
// working memory only: the request's body and its output tensor are
// bounded elsewhere (max_body_bytes, max_images).
//
// The lanes are internal/budget's: small decodes, large decodes, and
// answers within the large lane's room (ReserveAnswer; prep's answercharge.go), so that
// every charge is one *budget.Charge, released once.
//
// The zero *Gate (nil) admits everything at once.
type Gate struct {
	places int   // decodes of each lane at once
	small  int64 // the largest cost of a small decode
	budget int64 // the whole budget; large decodes get budget − places×small

	lanes        *budget.Budget
	smallDecodes *budget.Lane // places places, places × small bytes
	largeDecodes *budget.Lane // places places, the rest of the bytes
	answers      *budget.Lane // within largeDecodes: its bytes, no place
	// burst follows the large lane's bytes, so that the memory a burst
	// of large decodes held goes back to the OS once it is over
	// (internal/osmem).
	burst osmem.Gauge
}

// BurstBytes: bursts of decompressed bodies, or of large decodes at the
// gate, below this are left to the Go scavenger; past it the worker's
// memory goes back to the OS when the burst is over, not minutes later
// (after a gzip-bomb burst the worker held ~134 MiB over rest).
const BurstBytes = 64 << 20

// SmallMax is the largest cost of a small decode with an ample
// budget: 16 MiB, a decoded 4-megapixel RGBA PNG or far more than a
// photo JPEG needs (decoded at a DCT scale near the model's input).
const SmallMax = 16 << 20

// DefaultBudget is the budget when prep.max_decode_bytes is 0:
// room for the costliest image the models allow, 8 bytes for each of the
// largest max_pixels (every image max_pixels and the PNG cost limits let
// through fits: 16-bit ones of half as many pixels take 8 + 3 bytes a
// pixel, 8-bit grey 4 + 3, 8-bit RGBA 4, plus resize rows), beside a
// small decode on each of places CPUs.
func DefaultBudget(maxPixels int64, places int) int64 {
	return 8*maxPixels + int64(places)*SmallMax
}

// New makes the gate of a worker with GOMAXPROCS places and
// budget bytes (> 0). The small lane takes at most half the budget:
// small = min(16 MiB, budget / (2 × places)).
func New(total int64) *Gate {
	p := max(runtime.GOMAXPROCS(0), 1)
	return NewLanes(p, min(SmallMax, total/int64(2*p)), total)
}

// NewLanes makes the gate of places places, small decodes up to small
// bytes, and a budget of total bytes.
func NewLanes(places int, small, total int64) *Gate {
	g := &Gate{places: places, small: small, budget: total}
	g.smallDecodes = &budget.Lane{Name: "small decodes", Room: int64(places) * small, Places: places}
	g.largeDecodes = &budget.Lane{Name: "large decodes", Room: g.Largest(), Places: places,
		Burst: &g.burst, BurstBytes: BurstBytes}
	g.answers = &budget.Lane{Name: "answers", Within: g.largeDecodes}
	g.lanes = budget.New(g.smallDecodes, g.largeDecodes, g.answers)
	return g
}

// Places is how many decodes of each lane run at once.
func (g *Gate) Places() int { return g.places }

// Small is the largest cost of a small decode.
func (g *Gate) Small() int64 { return g.small }

// Total is the whole budget, both lanes.
func (g *Gate) Total() int64 { return g.budget }

// IsLarge reports whether a decode of cost goes to the large lane.
func (g *Gate) IsLarge(cost int64) bool { return g != nil && cost > g.small }

// Largest is the most one decode may cost: the large lane's share.
func (g *Gate) Largest() int64 { return g.budget - int64(g.places)*g.small }

// LargeCost is what a charge of cost takes in the large lane: at least
// a large decode's least cost, so that it counts as large, and at most
// the lane's share, which it then takes whole, alone.
func (g *Gate) LargeCost(cost int64) int64 { return max(min(cost, g.Largest()), g.small+1) }

// OverBudgetError is an image whose decode would cost more than the
// gate's large lane holds: it could never enter.
type OverBudgetError struct{ Cost, Largest, Budget int64 }

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("decoding it takes about %d bytes, more than the %d one decode may use (prep.max_decode_bytes is %d, less room kept for small images); send a smaller image",
		e.Cost, e.Largest, e.Budget)
}

// ErrOverBudget is what an *OverBudgetError Is.
var ErrOverBudget = errors.New("decode over the prep worker's decode budget")

func (e *OverBudgetError) Is(target error) bool { return target == ErrOverBudget }

// Check refuses a cost that could never enter (an *OverBudgetError).
func (g *Gate) Check(cost int64) error {
	if g != nil && cost > g.small && cost > g.Largest() {
		return &OverBudgetError{Cost: cost, Largest: g.Largest(), Budget: g.budget}
	}
	return nil
}

// Enter waits until a decode of cost bytes may run, first come first
// served in its lane, giving up with stop's error (asked every
// budget.Poll) when the client has gone or its deadline passes, or at
// once with an *OverBudgetError for a cost that could never run. The
// caller releases the charge once the decode is done (nil: the nil gate
// charges nothing).
func (g *Gate) Enter(cost int64, stop func() error) (*budget.Charge, error) {
	if g == nil {
		return nil, nil
	}
	if err := g.Check(cost); err != nil {
		return nil, err
	}
	lane := g.smallDecodes
	if g.IsLarge(cost) {
		lane = g.largeDecodes
	}
	return g.lanes.Wait(context.Background(), cost, lane, stop)
}

// ReserveAnswer takes an answer's room in the answers lane, within the
// large lane's, without waiting: an error when the lane lacks it.
func (g *Gate) ReserveAnswer(cost int64) (*budget.Charge, error) {
	return g.lanes.Reserve(g.LargeCost(cost), g.answers)
}

// State is what the gate holds and queues, for tests and logs:
// LargeBytes counts the answers' bytes too, LargeIn the decodes only.
type State struct {
	SmallIn, LargeIn           int
	LargeBytes                 int64
	SmallWaiting, LargeWaiting int
}

func (g *Gate) State() State {
	s, l := g.smallDecodes.State(), g.largeDecodes.State()
	return State{SmallIn: s.In, LargeIn: l.In, LargeBytes: l.Bytes, SmallWaiting: s.Waiting, LargeWaiting: l.Waiting}
}

// Budget is the worker's decode budget: configured when it is set
// (> 0), else DefaultBudget for the largest max_pixels of the image
// models among procs.
func Budget(configured int64, procs []worker.Processing) int64 {
	if configured > 0 {
		return configured
	}
	var most int64
	for _, p := range procs {
		if p.Image != nil {
			most = max(most, int64(cmp.Or(p.Image.MaxPixels, imageprep.DefaultMaxPixels)))
		}
	}
	return DefaultBudget(cmp.Or(most, imageprep.DefaultMaxPixels), max(runtime.GOMAXPROCS(0), 1))
}
