package prep

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestModelConfigTritonShape checks the model configuration against
// Triton's JSON form field by field: a batching model served by two GPU
// infer workers and one CPU worker.
func TestModelConfigTritonShape(t *testing.T) {
	md := testMetadata("mlp")
	md.Inputs[0].Shape = []int64{-1, 16}
	md.Outputs = append(md.Outputs, tensor.Spec{Name: "label", DType: tensor.Bytes, Shape: []int64{-1, -1}},
		tensor.Spec{Name: "score", DType: tensor.FP16, Shape: []int64{-1}})
	m := &model{md: md, api: md, classify: &classifier{output: "y", labels: "labels.txt"}}
	b := &worker.Batching{MaxBatchSize: 8, MaxQueueDelay: 250 * time.Microsecond, PreferredBatchSizes: []int{4, 8}, Instances: 2}
	servings := []worker.Serving{
		{Batching: b, Provider: worker.ProviderCUDA, GPUIndex: 1},
		{Batching: b, Provider: worker.ProviderCUDA, GPUIndex: 0},
		{Batching: b, Provider: worker.ProviderCPU},
	}
	raw, err := json.Marshal(buildModelConfig(m, servings, 60e6))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "mlp", "platform": "onnxruntime_onnx", "backend": "onnxruntime", "max_batch_size": 8.0,
		"default_model_filename": "model.onnx",
		"version_policy":         map[string]any{"latest": map[string]any{"num_versions": 1.0}},
		"input": []any{map[string]any{"name": "x", "data_type": "TYPE_FP32", "format": "FORMAT_NONE",
			"dims": []any{16.0}, "is_shape_tensor": false, "optional": false}},
		"output": []any{
			map[string]any{"name": "y", "data_type": "TYPE_FP32", "dims": []any{1.0}, "label_filename": "labels.txt", "is_shape_tensor": false},
			map[string]any{"name": "label", "data_type": "TYPE_STRING", "dims": []any{-1.0}, "label_filename": "", "is_shape_tensor": false},
			map[string]any{"name": "score", "data_type": "TYPE_FP16", "dims": []any{1.0}, "reshape": map[string]any{"shape": []any{}},
				"label_filename": "", "is_shape_tensor": false},
		},
		"dynamic_batching": map[string]any{"preferred_batch_size": []any{4.0, 8.0}, "max_queue_delay_microseconds": 250.0,
			"preserve_ordering": false, "priority_levels": 0.0, "default_priority_level": 0.0,
			"default_queue_policy": map[string]any{"timeout_action": "REJECT", "default_timeout_microseconds": 60e6,
				"allow_timeout_override": true, "max_queue_size": 1024.0}},
		"instance_group": []any{
			map[string]any{"name": "mlp_gpu", "kind": "KIND_GPU", "count": 2.0, "gpus": []any{0.0, 1.0}},
			map[string]any{"name": "mlp_cpu", "kind": "KIND_CPU", "count": 2.0, "gpus": []any{}},
		},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v; want %#v", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %q", k)
		}
	}
}

// TestModelConfigUnbatched: without batching the dims are the whole shape
// and there is no dynamic_batching, as in Triton; a worker that reports no
// serving counts as one CPU instance.
func TestModelConfigUnbatched(t *testing.T) {
	md := testMetadata("fixed")
	md.Inputs[0].Shape = []int64{1, 3, 224, 224}
	m := &model{md: md, api: md}
	cfg := buildModelConfig(m, []worker.Serving{{Provider: worker.ProviderCPU}, {}}, 1)
	if cfg.MaxBatchSize != 0 || cfg.DynamicBatching != nil {
		t.Errorf("max_batch_size %d, dynamic_batching %+v; want 0 and none", cfg.MaxBatchSize, cfg.DynamicBatching)
	}
	if !reflect.DeepEqual(cfg.Input[0].Dims, []int64{1, 3, 224, 224}) {
		t.Errorf("dims %v; want the whole shape [1 3 224 224]", cfg.Input[0].Dims)
	}
	if len(cfg.InstanceGroup) != 1 || cfg.InstanceGroup[0].Kind != "KIND_CPU" || cfg.InstanceGroup[0].Count != 2 {
		t.Errorf("instance_group %+v; want one KIND_CPU group of 2", cfg.InstanceGroup)
	}
}
