package prep

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// openArena creates this prep worker's arena when the spec asks for the
// shared-memory handoff; nil (inline) when it does not, or when /dev/shm
// is unusable, which is logged.
func openArena(rt *worker.Runtime) *arena.Arena {
	s := rt.Spec
	if s.Handoff != "shm" {
		return nil
	}
	a, err := arena.Create(arena.PathFor(s.Socket), s.ArenaSlots, int(s.ArenaSlotBytes))
	if err != nil {
		rt.Log.Warn().Err(err).Msg("no shared-memory arena: tensors go inline")
		return nil
	}
	rt.Log.Info().Str("arena", a.Path()).Int("slots", s.ArenaSlots).Int64("slot_bytes", s.ArenaSlotBytes).Msg("shared-memory handoff")
	return a
}

// maxArenaWait bounds how long a request waits for a free slot.
const maxArenaWait = time.Second

// errArenaFull is answered 503 with Retry-After.
var errArenaFull = errors.New("every shared-memory slot of this prep worker is in use; retry later")

// handoff is one request's place in the arena; the zero value (no arena,
// or a frame too big for a slot) means inline.
type handoff struct {
	a    *arena.Arena
	slot int
}

// setBody puts the request frame for r into up: into a slot of the arena
// (headers only) or, without one or when it does not fit, into the body.
func (h *handler) setBody(up *fasthttp.Request, r *tensor.Request, wait time.Duration) (handoff, error) {
	if h.arena == nil {
		up.SetBodyRaw(tensor.AppendRequest(nil, r))
		return handoff{}, nil
	}
	slot, err := h.arena.Acquire(min(wait, maxArenaWait))
	if err != nil {
		return handoff{}, errArenaFull
	}
	frame := tensor.AppendRequest(h.arena.Buf(slot), r)
	if !h.arena.Fits(slot, frame) {
		h.arena.Release(slot)
		up.SetBodyRaw(frame) // built outside the slot
		return handoff{}, nil
	}
	up.Header.Set(worker.ArenaHeader, h.arena.Path())
	up.Header.Set(worker.SlotHeader, strconv.Itoa(slot)+":"+strconv.Itoa(len(frame)))
	return handoff{h.arena, slot}, nil
}

// reply copies the infer worker's reply frame out of the slot (or the
// body) and releases the slot: after any answer the infer worker is done
// with it. The copy outlives both the slot and the response.
func (ho handoff) reply(resp *fasthttp.Response) ([]byte, error) {
	if ho.a == nil {
		return append([]byte(nil), resp.Body()...), nil
	}
	defer ho.a.Release(ho.slot)
	n := resp.Header.Peek(worker.ReplyHeader)
	if len(n) == 0 {
		return append([]byte(nil), resp.Body()...), nil
	}
	size, err := strconv.Atoi(string(n))
	if err != nil {
		return nil, fmt.Errorf("bad %s %q", worker.ReplyHeader, n)
	}
	frame, err := ho.a.Frame(ho.slot, size)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), frame...), nil
}

// failed handles a request that got no answer: the infer worker may still
// hold the slot, so it comes back only when that worker finishes or could
// no longer be running it.
func (ho handoff) failed(grace time.Duration) {
	if ho.a != nil {
		ho.a.Abandon(ho.slot, grace)
	}
}
