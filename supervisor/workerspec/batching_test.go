package workerspec

import (
	"reflect"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

func TestBatching(t *testing.T) {
	if have, want := Batching(nil), (&worker.Batching{MaxQueueSize: 1024, Instances: 1}); !reflect.DeepEqual(have, want) {
		t.Errorf("Batching(nil) = %+v, want %+v", have, want)
	}
	b := &config.BatchingConfig{MaxBatchSize: 8, MaxQueueDelay: config.Duration{Duration: time.Millisecond}, PreferredBatchSizes: []int{4}, MaxQueueSize: 5, Instances: 2}
	want := &worker.Batching{MaxBatchSize: 8, MaxQueueDelay: time.Millisecond, PreferredBatchSizes: []int{4}, MaxQueueSize: 5, Instances: 2}
	if have := Batching(b); !reflect.DeepEqual(have, want) {
		t.Errorf("workerBatching = %+v, want %+v", have, want)
	}
}

// TestWarmupPolicies: config validates the warm-up policies the infer
// worker reads under its own names (config does not import worker).
func TestWarmupPolicies(t *testing.T) {
	if config.WarmupZeros != worker.WarmupZeros || config.WarmupNone != worker.WarmupNone {
		t.Fatalf("config's warm-up policies %q, %q differ from worker's %q, %q",
			config.WarmupZeros, config.WarmupNone, worker.WarmupZeros, worker.WarmupNone)
	}
}
