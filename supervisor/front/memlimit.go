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
//
// The headroom is what the master may hold past the budget: its own
// memory at rest (about 18 MiB of Go memory: heap, stacks, runtime) and
// the garbage between two GCs. The budget, not the headroom, is what the
// master's RSS may rise by under load (the hostile suite's bound), and
// with the budget full of live bytes the GC runs once the garbage fills
// the headroom: at 64 MiB, gRPC clients that never read their 1 MiB
// answers (grpc-unread-large: 224 MiB of live answers, 235 MiB live in
// all) left the heap cycling up to the limit, RSS 290 MiB over rest for
// a 256 MiB budget; at 16 MiB, 249 MiB, and the well-behaved clients'
// p99 was unchanged (mostly pointer-free bytes, a GC's marking is cheap).
const masterMemHeadroom = 16 << 20

// ApplyMemoryLimit sets the master's soft memory limit for cfg's body
// budget, at start and on every reload; a GOMEMLIMIT in the environment
// wins (the operator's choice).
func ApplyMemoryLimit(cfg *config.Config) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(cfg.BodyBudgetLimit() + masterMemHeadroom)
}
