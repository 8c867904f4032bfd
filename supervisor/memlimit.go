package supervisor

import (
	"os"
	"runtime/debug"
)

// The body budget bounds the body bytes the master holds live, but a body
// it has answered stays in the heap as garbage until the next GC, and
// with the default GOGC the next GC comes only when the heap has doubled:
// under a flood of bodies as large as max_body_bytes the master's RSS
// reached rest + 1.75 × the budget (cmd/hostile, bytes-flood-*). A soft
// memory limit of the budget plus masterMemHeadroom makes the GC collect
// answered bodies before new ones push the heap past that, so the bound
// holds for RSS, not only for live bytes. It is soft: past it the GC runs
// more often (the runtime caps its CPU at half), it never fails an
// allocation.
const masterMemHeadroom = 64 << 20

// applyMemoryLimit sets the master's soft memory limit for cfg's body
// budget, at start and on every reload; a GOMEMLIMIT in the environment
// wins (the operator's choice).
func applyMemoryLimit(cfg *Config) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(bodyBudgetLimit(cfg) + masterMemHeadroom)
}
