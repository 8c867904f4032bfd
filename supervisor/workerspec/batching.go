package workerspec

import (
	"slices"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// Batching is the batching an infer worker's spec carries for m.
func Batching(b *config.BatchingConfig) *worker.Batching {
	if b == nil {
		b = config.DefaultBatching()
	}
	return &worker.Batching{
		MaxBatchSize:        b.MaxBatchSize,
		MaxQueueDelay:       b.MaxQueueDelay.Duration,
		PreferredBatchSizes: slices.Clone(b.PreferredBatchSizes),
		MaxQueueSize:        b.MaxQueueSize,
		Instances:           b.Instances,
	}
}
