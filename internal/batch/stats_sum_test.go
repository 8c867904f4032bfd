package batch

import (
	"reflect"
	"testing"
)

func TestStatsAdd(t *testing.T) {
	a := Stats{LastInference: 5, InferenceCount: 3, ExecutionCount: 2, QueueDepth: 1, QueueFull: 1,
		InferenceStats: InferenceStats{Success: Duration{2, 10}, Queue: Duration{2, 4}},
		BatchStats:     []BatchStats{{BatchSize: 1, ComputeInfer: Duration{1, 7}}, {BatchSize: 2, ComputeInfer: Duration{1, 9}}}}
	b := Stats{LastInference: 9, InferenceCount: 4, ExecutionCount: 1, Dropped: 2,
		InferenceStats: InferenceStats{Success: Duration{1, 1}, Fail: Duration{1, 3}, Queue: Duration{1, 1}},
		BatchStats:     []BatchStats{{BatchSize: 2, ComputeInfer: Duration{2, 1}}, {BatchSize: 4, ComputeInput: Duration{1, 2}}}}
	var sum Stats
	sum.Add(a)
	sum.Add(b)
	want := Stats{LastInference: 9, InferenceCount: 7, ExecutionCount: 3, QueueDepth: 1, QueueFull: 1, Dropped: 2,
		InferenceStats: InferenceStats{Success: Duration{3, 11}, Fail: Duration{1, 3}, Queue: Duration{3, 5}},
		BatchStats: []BatchStats{{BatchSize: 1, ComputeInfer: Duration{1, 7}}, {BatchSize: 2, ComputeInfer: Duration{3, 10}},
			{BatchSize: 4, ComputeInput: Duration{1, 2}}}}
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("sum = %+v\nwant  %+v", sum, want)
	}
}
