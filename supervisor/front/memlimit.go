package front

import (
	"os"
	"runtime/debug"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The body budget bounds the body bytes the master holds live. Bodies of
// mappedBodyMin or more are mappings unmapped when their request ends
// (bodybuf.go), so they never wait for a GC. Smaller bodies are Go heap:
// an answered one stays as garbage until the next GC, which the default
// GOGC runs only when the heap has doubled. A soft memory limit of the
// budget plus masterMemHeadroom makes the GC collect them before the heap
// passes that (before the mapped buffers, a flood of max_body_bytes
// bodies took RSS to rest + 1.75 x the budget). It is soft: past it the
// GC runs more often (the runtime caps its CPU at half), it never fails an
// allocation. Mapped bodies are outside the Go heap and so outside this
// limit, which is right: the budget bounds them.
const masterMemHeadroom = 64 << 20

// ApplyMemoryLimit sets the master's soft memory limit for cfg's body
// budget, at start and on every reload; a GOMEMLIMIT in the environment
// wins (the operator's choice).
func ApplyMemoryLimit(cfg *config.Config) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(cfg.BodyBudgetLimit() + masterMemHeadroom)
}
