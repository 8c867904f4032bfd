package worker

// The prep → infer headers of the shared-memory handoff (internal/arena).
// A request whose tensors are in the prep worker's arena has an empty body
// and these headers instead; the infer worker answers the same way when
// its reply fits the slot.
const (
	// ArenaHeader is the prep worker's arena file.
	ArenaHeader = "Supervisor-Arena"
	// SlotHeader is "<slot>:<frame length>": where the request frame is.
	SlotHeader = "Supervisor-Slot"
	// ReplyHeader is the reply frame's length in the same slot; absent
	// when the reply is in the body.
	ReplyHeader = "Supervisor-Reply"
)
