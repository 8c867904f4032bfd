package infer

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// arenas are the prep workers' arenas this infer worker has mapped, by
// Ref (whose token tells a new prep worker's arena from an old one at a
// reused pid and descriptor). A prep worker that is replaced leaves its
// arena still mapped here; the janitor unmaps such arenas once no request
// uses them, so recycling prep workers does not pile up mappings.
type arenas struct {
	mu     sync.Mutex
	mapped map[arena.Ref]*mappedArena
}

type mappedArena struct {
	a    *arena.Arena
	refs int // requests using it now; guarded by arenas.mu
}

// request is where an infer request's frame is: in a claimed slot of a
// prep worker's arena, or (zero arena) in the body.
type request struct {
	frame []byte
	a     *mappedArena
	tk    arena.Ticket
}

// frame finds the request frame of ctx: in the arena slot its headers
// name, which it claims first (a slot it cannot claim was revoked by its
// prep worker and is not touched: arena.ErrNotClaimable), or in the body.
func (s *server) frame(ctx *fasthttp.RequestCtx) (request, error) {
	refStr := string(ctx.Request.Header.Peek(worker.ArenaHeader))
	if refStr == "" {
		return request{frame: ctx.PostBody()}, nil
	}
	ref, err := arena.ParseRef(refStr)
	if err != nil {
		return request{}, err
	}
	tk, n, err := arena.ParseSlotDescriptor(string(ctx.Request.Header.Peek(worker.SlotHeader)))
	if err != nil {
		return request{}, err
	}
	m, err := s.arenas.use(ref)
	if err != nil {
		return request{}, &arenaOpenError{err}
	}
	frame, err := m.a.Frame(tk.Slot, n)
	if err == nil {
		err = m.a.Claim(tk)
	}
	if err != nil {
		s.arenas.done(m)
		return request{}, err
	}
	return request{frame: frame, a: m, tk: tk}, nil
}

// arenaOpenError is a prep worker's arena this infer worker could not open
// or map: nothing in it was touched, the request did not run.
type arenaOpenError struct{ err error }

func (e *arenaOpenError) Error() string {
	return "this infer worker could not open the prep worker's shared-memory arena: " + e.err.Error()
}

func (e *arenaOpenError) Unwrap() error { return e.err }

// refuseFrame answers a request whose frame could not be had: 503 with
// worker.ArenaRefusedHeader for an arena it could not open (the prep
// worker resends the request inline), 409 for a slot its prep worker
// revoked (nobody waits for the answer), 400 for the rest.
func refuseFrame(ctx *fasthttp.RequestCtx, err error) {
	var oe *arenaOpenError
	switch {
	case errors.As(err, &oe):
		ctx.Error(err.Error(), fasthttp.StatusServiceUnavailable) // resets headers: first
		ctx.Response.Header.Set(worker.ArenaRefusedHeader, "1")
	case errors.Is(err, arena.ErrNotClaimable):
		ctx.Error(err.Error(), fasthttp.StatusConflict)
	default:
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
	}
}

// reply answers with the reply frame of outs: into the request's slot when
// it fits (the body stays empty), else in the body. It must be the last
// use of the slot.
func (r request) reply(ctx *fasthttp.RequestCtx, outs []tensor.Tensor) {
	ctx.SetContentType("application/octet-stream")
	if r.a == nil {
		ctx.Response.SetBodyRaw(tensor.AppendTensors(nil, outs))
		return
	}
	frame := tensor.AppendTensors(r.a.a.Buf(r.tk.Slot), outs)
	if r.a.a.Fits(r.tk.Slot, frame) {
		ctx.Response.Header.Set(worker.ReplyHeader, strconv.Itoa(len(frame)))
		return
	}
	ctx.Response.SetBodyRaw(frame)
}

// finish tells the prep worker this infer worker is done with the slot,
// whatever the outcome, and lets the janitor unmap an arena no longer used.
func (s *server) finish(r request) {
	if r.a != nil {
		r.a.a.Finish(r.tk)
		s.arenas.done(r.a)
	}
}

func (as *arenas) use(ref arena.Ref) (*mappedArena, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	m := as.mapped[ref]
	if m == nil {
		a, err := arena.Open(ref)
		if err != nil {
			return nil, err
		}
		if as.mapped == nil {
			as.mapped = map[arena.Ref]*mappedArena{}
		}
		m = &mappedArena{a: a}
		as.mapped[ref] = m
	}
	m.refs++
	return m, nil
}

func (as *arenas) done(m *mappedArena) {
	as.mu.Lock()
	m.refs--
	as.mu.Unlock()
}

// janitor unmaps, every interval until stop, the arenas whose prep worker
// is gone (closed the memfd: it exited) and that no request uses.
func (as *arenas) janitor(interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		as.mu.Lock()
		for ref, m := range as.mapped {
			if m.refs == 0 && m.a.Gone() {
				m.a.Close()
				delete(as.mapped, ref)
			}
		}
		as.mu.Unlock()
	}
}
