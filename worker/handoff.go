package worker

// The prep → infer headers of the shared-memory handoff (internal/arena).
// A request whose tensors are in the prep worker's arena has an empty body
// and these headers instead; the infer worker answers the same way when
// its reply fits the slot.
const (
	// ArenaHeader is the prep worker's arena: an arena.Ref,
	// "<pid>:<memfd>:<token>".
	ArenaHeader = "Supervisor-Arena"
	// SlotHeader is "<slot>:<seq>:<frame length>": where the request frame
	// is, and the arena.Ticket the infer worker must claim it with.
	SlotHeader = "Supervisor-Slot"
	// ReplyHeader is the reply frame's length in the same slot; absent
	// when the reply is in the body.
	ReplyHeader = "Supervisor-Reply"
	// ArenaRefusedHeader marks an infer worker's answer (503) to a request
	// whose arena it could not open or map (/proc access denied, not a
	// sealed memfd, ...): it never claimed the slot nor ran the request,
	// so the prep worker may send it again with the tensors inline.
	ArenaRefusedHeader = "Supervisor-Arena-Refused"
)
