package prep

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// openArena creates this prep worker's arena when the spec asks for the
// shared-memory handoff; nil (inline) when it does not, or when no sealed
// memfd can be made, which is logged.
func openArena(rt *worker.Runtime) *arena.Arena {
	s := rt.Spec
	if s.Handoff != "shm" {
		return nil
	}
	a, err := arena.Create(s.ArenaSlots, int(s.ArenaSlotBytes))
	if err != nil {
		rt.Log.Warn().Err(err).Msg("no shared-memory arena: tensors go inline")
		return nil
	}
	rt.Log.Info().Stringer("arena", a.Ref()).Int("slots", s.ArenaSlots).Int64("slot_bytes", s.ArenaSlotBytes).Msg("shared-memory handoff")
	return a
}

// maxArenaWait bounds how long a request waits for a free slot.
const maxArenaWait = time.Second

var (
	// errArenaFull is answered 503 with Retry-After.
	errArenaFull = errors.New("every shared-memory slot of this prep worker is in use; retry later")
	// errExpired is answered 503 with Retry-After, at once: the client's
	// deadline passed before the request could be sent to an infer worker.
	errExpired = errors.New("the request's deadline passed before it reached an infer worker; retry with a longer X-Request-Timeout")
)

// handoff is one request's place in the arena; the zero value (no arena,
// or a frame too big for a slot) means inline.
type handoff struct {
	a  *arena.Arena
	tk arena.Ticket
}

// setBody puts the request frame for r into up: into a slot of the arena
// (headers only) or, without one or when it does not fit, into the body.
// deadline is when the client stops waiting: no slot is taken after it.
func (h *handler) setBody(up *fasthttp.Request, r *tensor.Request, deadline time.Time) (handoff, error) {
	if h.arena == nil {
		up.SetBodyRaw(tensor.AppendRequest(nil, r))
		return handoff{}, nil
	}
	tk, err := h.arena.Acquire(minTime(deadline, time.Now().Add(maxArenaWait)))
	if err != nil {
		if errors.Is(err, arena.ErrExpired) || !time.Now().Before(deadline) {
			return handoff{}, errExpired
		}
		h.arenaFull()
		return handoff{}, errArenaFull
	}
	frame := tensor.AppendRequest(h.arena.Buf(tk.Slot), r)
	if !h.arena.Fits(tk.Slot, frame) {
		h.arena.Settle(tk, 0) // never sent: revoked and freed at once
		up.SetBodyRaw(frame)  // built outside the slot
		return handoff{}, nil
	}
	up.Header.Set(worker.ArenaHeader, h.arena.Ref().String())
	up.Header.Set(worker.SlotHeader, arena.SlotDescriptor(tk, len(frame)))
	return handoff{h.arena, tk}, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// reply copies the infer worker's reply frame out of the slot (or the
// body). The copy outlives both the slot and the response; settle comes
// after it.
func (ho handoff) reply(resp *fasthttp.Response) ([]byte, error) {
	n := resp.Header.Peek(worker.ReplyHeader)
	if ho.a == nil || len(n) == 0 {
		return append([]byte(nil), resp.Body()...), nil
	}
	size, err := strconv.Atoi(string(n))
	if err != nil {
		return nil, fmt.Errorf("bad %s %q", worker.ReplyHeader, n)
	}
	frame, err := ho.a.Reply(ho.tk, size)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), frame...), nil
}

// settle ends the request's use of its slot, whatever happened: a slot no
// infer worker claimed (not sent, no backend, deadline before send, or
// refused) is free at once; a claimed one when its infer worker is done
// with it or dead. backstop bounds only the case where that cannot be told
// (see arena.Settle).
func (ho handoff) settle(backstop time.Duration) {
	if ho.a != nil {
		ho.a.Settle(ho.tk, backstop)
	}
}

// resendInline sends again, with the tensors in the body, a request whose
// infer worker could not open this prep worker's arena (its answer carried
// worker.ArenaRefusedHeader). That worker answered before claiming the
// slot, so the request never ran: resending is safe, and the client gets
// its answer rather than a failure. The first refusal is logged; it means
// the infer workers cannot map prep arenas (/proc access, a seccomp or
// ptrace policy), and every request then pays a second trip until that is
// fixed or handoff is set to inline.
func (h *handler) resendInline(up *fasthttp.Request, resp *fasthttp.Response, r *tensor.Request, deadline time.Time, route *lb.Route, gone lb.Client) error {
	if h.arenaRefusedLogged.CompareAndSwap(false, true) {
		h.log.Warn().Str("infer_answer", string(resp.Body())).
			Msg("an infer worker could not open this prep worker's shared-memory arena: requests it refuses are resent inline (logged once)")
	}
	up.Header.Del(worker.ArenaHeader)
	up.Header.Del(worker.SlotHeader)
	up.SetBodyRaw(tensor.AppendRequest(nil, r))
	resp.Reset()
	return h.up.DoRouteFor(up, resp, deadline, route, gone, nil)
}

// arenaFull counts a request turned away for want of a slot.
func (h *handler) arenaFull() {
	if h.board != nil {
		h.board.ArenaFull()
	}
}

// arenaPublishInterval is how often the arena's occupancy reaches the
// scoreboard: readers (status, /metrics, readiness) look every second or
// more.
const arenaPublishInterval = 100 * time.Millisecond

// publishArena writes the arena's occupancy into the scoreboard slot
// until stop, and logs slots that came back from dead infer workers or
// by the backstop (which means their claimer's liveness could not be read).
func publishArena(a *arena.Arena, s *shm.Slot, log zerolog.Logger, stop <-chan struct{}) {
	tick := time.NewTicker(arenaPublishInterval)
	defer tick.Stop()
	var last arena.Stats
	for {
		st := a.Stats()
		s.SetArena(st.Slots, st.InUse, st.FullSince)
		if n := st.Reclaimed - last.Reclaimed; n > 0 {
			log.Info().Uint64("slots", n).Msg("arena slots reclaimed from infer workers that died holding them")
		}
		if n := st.Backstopped - last.Backstopped; n > 0 {
			log.Warn().Uint64("slots", n).Msg("arena slots freed by the backstop grace: their infer worker's liveness could not be read from /proc")
		}
		last = st
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}
