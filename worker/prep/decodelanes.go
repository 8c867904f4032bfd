package prep

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

// decodeGate decides when one prep worker decodes each image, weighing
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
// also run at a lower CPU priority (nicethread.go), on Go Ps of their own
// (the worker runs 2 × places Ps), so that the CPU they share goes first
// to small decodes, to this worker's other requests and to the rest of
// the host's.
//
// A wait ends when the decode enters, or when its stopper says the client
// has gone (its deadline passed, or the master hung up; asked every
// budget.Poll), so no wait outlives the request. The budget counts decoding's
// working memory only: the request's body and its output tensor are
// bounded elsewhere (max_body_bytes, max_images).
//
// The lanes are internal/budget's: small decodes, large decodes, and
// answers within the large lane's room (answercharge.go), so that
// every charge is one *budget.Charge, released once.
//
// The zero *decodeGate (nil) admits everything at once.
type decodeGate struct {
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

// smallDecodeMax is the largest cost of a small decode with an ample
// budget: 16 MiB, a decoded 4-megapixel RGBA PNG or far more than a
// photo JPEG needs (decoded at a DCT scale near the model's input).
const smallDecodeMax = 16 << 20

// defaultDecodeBudget is the budget when prep.max_decode_bytes is 0:
// room for the costliest image the models allow, 8 bytes for each of the
// largest max_pixels (every image max_pixels and the PNG cost limits let
// through fits: 16-bit ones of half as many pixels take 8 + 3 bytes a
// pixel, 8-bit grey 4 + 3, 8-bit RGBA 4, plus resize rows), beside a
// small decode on each of places CPUs.
func defaultDecodeBudget(maxPixels int64, places int) int64 {
	return 8*maxPixels + int64(places)*smallDecodeMax
}

// newDecodeGate makes the gate of a worker with GOMAXPROCS places and
// budget bytes (> 0). The small lane takes at most half the budget:
// small = min(16 MiB, budget / (2 × places)).
func newDecodeGate(total int64) *decodeGate {
	p := max(runtime.GOMAXPROCS(0), 1)
	return newLanes(p, min(smallDecodeMax, total/int64(2*p)), total)
}

// newLanes makes the gate of places places, small decodes up to small
// bytes, and a budget of total bytes.
func newLanes(places int, small, total int64) *decodeGate {
	g := &decodeGate{places: places, small: small, budget: total}
	g.smallDecodes = &budget.Lane{Name: "small decodes", Room: int64(places) * small, Places: places}
	g.largeDecodes = &budget.Lane{Name: "large decodes", Room: g.largest(), Places: places,
		Burst: &g.burst, BurstBytes: burstBytes}
	g.answers = &budget.Lane{Name: "answers", Within: g.largeDecodes}
	g.lanes = budget.New(g.smallDecodes, g.largeDecodes, g.answers)
	return g
}

// isLarge reports whether a decode of cost goes to the large lane.
func (g *decodeGate) isLarge(cost int64) bool { return g != nil && cost > g.small }

// largest is the most one decode may cost: the large lane's share.
func (g *decodeGate) largest() int64 { return g.budget - int64(g.places)*g.small }

// largeCost is what a charge of cost takes in the large lane: at least
// a large decode's least cost, so that it counts as large, and at most
// the lane's share, which it then takes whole, alone.
func (g *decodeGate) largeCost(cost int64) int64 { return max(min(cost, g.largest()), g.small+1) }

// overBudgetError is an image whose decode would cost more than the
// gate's large lane holds: it could never enter.
type overBudgetError struct{ cost, largest, budget int64 }

func (e *overBudgetError) Error() string {
	return fmt.Sprintf("decoding it takes about %d bytes, more than the %d one decode may use (prep.max_decode_bytes is %d, less room kept for small images); send a smaller image",
		e.cost, e.largest, e.budget)
}

// errOverBudget is what an *overBudgetError Is.
var errOverBudget = errors.New("decode over the prep worker's decode budget")

func (e *overBudgetError) Is(target error) bool { return target == errOverBudget }

// check refuses a cost that could never enter (an *overBudgetError).
func (g *decodeGate) check(cost int64) error {
	if g != nil && cost > g.small && cost > g.largest() {
		return &overBudgetError{cost: cost, largest: g.largest(), budget: g.budget}
	}
	return nil
}

// enter waits until a decode of cost bytes may run, first come first
// served in its lane, giving up with the stopper's error (asked every
// budget.Poll) when the client has gone or its deadline passes, or at
// once with an *overBudgetError for a cost that could never run. The
// caller releases the charge once the decode is done (nil: the nil gate
// charges nothing).
func (g *decodeGate) enter(cost int64, stop stopper) (*budget.Charge, error) {
	if g == nil {
		return nil, nil
	}
	if err := g.check(cost); err != nil {
		return nil, err
	}
	lane := g.smallDecodes
	if g.isLarge(cost) {
		lane = g.largeDecodes
	}
	return g.lanes.Wait(context.Background(), cost, lane, stop.check)
}

// gateState is what the gate holds and queues, for tests and logs:
// LargeBytes counts the answers' bytes too, LargeIn the decodes only.
type gateState struct {
	SmallIn, LargeIn           int
	LargeBytes                 int64
	SmallWaiting, LargeWaiting int
}

func (g *decodeGate) state() gateState {
	s, l := g.smallDecodes.State(), g.largeDecodes.State()
	return gateState{SmallIn: s.In, LargeIn: l.In, LargeBytes: l.Bytes, SmallWaiting: s.Waiting, LargeWaiting: l.Waiting}
}

// decodeBudget is the worker's decode budget: configured when it is set
// (> 0), else defaultDecodeBudget for the largest max_pixels of the image
// models among procs.
func decodeBudget(configured int64, procs []worker.Processing) int64 {
	if configured > 0 {
		return configured
	}
	var most int64
	for _, p := range procs {
		if p.Image != nil {
			most = max(most, int64(cmp.Or(p.Image.MaxPixels, imageprep.DefaultMaxPixels)))
		}
	}
	return defaultDecodeBudget(cmp.Or(most, imageprep.DefaultMaxPixels), max(runtime.GOMAXPROCS(0), 1))
}
