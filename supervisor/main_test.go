package supervisor

import (
	"os"
	"testing"

	"github.com/supervisor-dev/supervisor/worker"
)

// helperEnv selects a helper behaviour when the test binary is
// re-executed as a worker (the spawner runs `<exe> worker`); the worker
// side's own helpers are supervisor/workers'.
const helperEnv = "SV_TEST_WORKER"

func TestMain(m *testing.M) {
	if out := os.Getenv(tableflipChildEnv); out != "" {
		tableflipChild(out) // upgrade_parent_test.go
	}
	if os.Getenv(helperEnv) == "describe" {
		spec, err := worker.SpecFromEnv()
		if err != nil {
			os.Exit(90)
		}
		describeWorker(spec) // placement_test.go
		os.Exit(0)
	}
	os.Exit(m.Run())
}
