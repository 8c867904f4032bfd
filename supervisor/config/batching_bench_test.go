package config

import (
	"testing"
)

// BenchmarkPreferredSizes validates the longest list a config can give:
// every size from 1 to max_batch_size (65,536), once. A repository load's
// override (64 KiB) lists about 12,000 of them.
func BenchmarkPreferredSizes(b *testing.B) {
	bc := &BatchingConfig{MaxBatchSize: maxBatchSize}
	for n := range maxBatchSize {
		bc.PreferredBatchSizes = append(bc.PreferredBatchSizes, n+1)
	}
	for b.Loop() {
		v := &configValidator{}
		v.preferredSizes("preferred_batch_sizes", bc)
		if len(v.errs) != 0 {
			b.Fatal(v.errs)
		}
	}
}
