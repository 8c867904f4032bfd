package infer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// arenas are the prep workers' arenas this infer worker has mapped, by
// path. A prep worker that is replaced leaves its arena file deleted but
// still mapped here; the janitor unmaps such arenas once no request uses
// them, so recycling prep workers does not pile up mappings.
type arenas struct {
	mu     sync.Mutex
	mapped map[string]*mappedArena
}

type mappedArena struct {
	a    *arena.Arena
	refs int // requests using it now; guarded by arenas.mu
}

// request is where an infer request's frame is: in a slot of a prep
// worker's arena, or (zero arena) in the body.
type request struct {
	frame []byte
	a     *mappedArena
	slot  int
}

// frame finds the request frame of ctx: in the arena slot its headers
// name, or in the body.
func (s *server) frame(ctx *fasthttp.RequestCtx) (request, error) {
	path := string(ctx.Request.Header.Peek(worker.ArenaHeader))
	if path == "" {
		return request{frame: ctx.PostBody()}, nil
	}
	slotStr, lenStr, ok := strings.Cut(string(ctx.Request.Header.Peek(worker.SlotHeader)), ":")
	slot, err1 := strconv.Atoi(slotStr)
	n, err2 := strconv.Atoi(lenStr)
	if !ok || err1 != nil || err2 != nil {
		return request{}, fmt.Errorf("bad %s header", worker.SlotHeader)
	}
	m, err := s.arenas.use(path)
	if err != nil {
		return request{}, err
	}
	frame, err := m.a.Frame(slot, n)
	if err != nil {
		s.arenas.done(m)
		return request{}, err
	}
	return request{frame: frame, a: m, slot: slot}, nil
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
	frame := tensor.AppendTensors(r.a.a.Buf(r.slot), outs)
	if r.a.a.Fits(r.slot, frame) {
		ctx.Response.Header.Set(worker.ReplyHeader, strconv.Itoa(len(frame)))
		return
	}
	ctx.Response.SetBodyRaw(frame)
}

// finish tells the prep worker this infer worker is done with the slot,
// whatever the outcome, and lets the janitor unmap an arena no longer used.
func (s *server) finish(r request) {
	if r.a != nil {
		r.a.a.Finish(r.slot)
		s.arenas.done(r.a)
	}
}

func (as *arenas) use(path string) (*mappedArena, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	m := as.mapped[path]
	if m == nil {
		a, err := arena.Open(path)
		if err != nil {
			return nil, err
		}
		if as.mapped == nil {
			as.mapped = map[string]*mappedArena{}
		}
		m = &mappedArena{a: a}
		as.mapped[path] = m
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
// is gone (the file was removed) and that no request uses.
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
		for path, m := range as.mapped {
			if _, err := os.Stat(path); err != nil && m.refs == 0 {
				m.a.Close()
				delete(as.mapped, path)
			}
		}
		as.mu.Unlock()
	}
}
