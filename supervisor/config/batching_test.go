package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigBatchingValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want *BatchingConfig
	}{
		{"absent section is nil (the default)", "", nil},
		{"empty section is the default", "    batching: {}\n", DefaultBatching()},
		{"section with no value is nil", "    batching:\n", nil},
		{"every key", "    batching:\n      max_batch_size: 32\n      max_queue_delay: 2ms\n      preferred_batch_sizes: [8, 32]\n      max_queue_size: 64\n      instances: 2\n",
			&BatchingConfig{MaxBatchSize: 32, MaxQueueDelay: Duration{2 * time.Millisecond},
				PreferredBatchSizes: []int{8, 32}, MaxQueueSize: 64, Instances: 2}},
		{"missing keys keep their defaults", "    batching: {max_batch_size: 8}\n",
			&BatchingConfig{MaxBatchSize: 8, MaxQueueSize: 1024, Instances: 1}},
		{"empty preferred list", "    batching: {max_batch_size: 8, preferred_batch_sizes: []}\n",
			&BatchingConfig{MaxBatchSize: 8, MaxQueueSize: 1024, Instances: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParseConfig(t, "models:\n  - name: m\n    path: m.onnx\n"+tt.yaml, "t.yaml")
			if have := c.Models[0].Batching; !reflect.DeepEqual(have, tt.want) {
				t.Errorf("batching = %+v, want %+v", have, tt.want)
			}
		})
	}
}

func TestConfigBatchingErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each a prefix of one message, in order
	}{
		{"negative max_batch_size", "max_batch_size: -1",
			[]string{`t.yaml:4: models[0].batching.max_batch_size: -1 is out of range (use 0 to turn batching off, or 1 to 65536)`}},
		{"negative delay", "max_queue_delay: -1ms",
			[]string{`t.yaml:4: models[0].batching.max_queue_delay: -1ms is negative`}},
		{"delay without unit", "max_queue_delay: 5",
			[]string{`t.yaml:4: models[0].batching.max_queue_delay: "5" is not a duration`}},
		{"zero queue", "max_queue_size: 0",
			[]string{`t.yaml:4: models[0].batching.max_queue_size: 0 is out of range (use 1 to 1048576, e.g. 1024)`}},
		{"zero instances", "instances: 0",
			[]string{`t.yaml:4: models[0].batching.instances: 0 is out of range (use 1 to 64)`}},
		{"preferred without batching", "preferred_batch_sizes: [4]",
			[]string{`t.yaml:4: models[0].batching.preferred_batch_sizes: needs batching on`}},
		{"preferred above max", "max_batch_size: 8\n      preferred_batch_sizes: [4, 16, 4]",
			[]string{`t.yaml:5: models[0].batching.preferred_batch_sizes[1]: 16 is outside [1, max_batch_size 8]`,
				`t.yaml:5: models[0].batching.preferred_batch_sizes[2]: 4 is listed twice`}},
		{"many bad preferred sizes named up to eight", "max_batch_size: 8\n      preferred_batch_sizes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]",
			[]string{`t.yaml:5: models[0].batching.preferred_batch_sizes[0]: 0 is outside`, `t.yaml:5: models[0].batching.preferred_batch_sizes[1]: 0 is outside`,
				`t.yaml:5: models[0].batching.preferred_batch_sizes[2]: 0 is outside`, `t.yaml:5: models[0].batching.preferred_batch_sizes[3]: 0 is outside`,
				`t.yaml:5: models[0].batching.preferred_batch_sizes[4]: 0 is outside`, `t.yaml:5: models[0].batching.preferred_batch_sizes[5]: 0 is outside`,
				`t.yaml:5: models[0].batching.preferred_batch_sizes[6]: 0 is outside`, `t.yaml:5: models[0].batching.preferred_batch_sizes[7]: 0 is outside`,
				`t.yaml:5: models[0].batching.preferred_batch_sizes: 3 more sizes are outside [1, max_batch_size 8] or listed twice`}},
		{"preferred not a list", "max_batch_size: 8\n      preferred_batch_sizes: 4",
			[]string{`t.yaml:5: models[0].batching.preferred_batch_sizes: want a list of whole numbers such as [4, 8], got "4"`}},
		{"preferred not numbers", "max_batch_size: 8\n      preferred_batch_sizes: [four]",
			[]string{`t.yaml:5: models[0].batching.preferred_batch_sizes[0]: "four" is not a whole number`}},
		{"unknown key", "max_batch: 8",
			[]string{`t.yaml:4: unknown key "max_batch" in models[0].batching (known keys: max_batch_size, max_queue_delay, preferred_batch_sizes, max_queue_size, instances)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte("models:\n  - name: m\n    batching:\n      "+tt.yaml+"\n    path: m.onnx\n"), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}

func TestConfigBatchingRoundTrip(t *testing.T) {
	c := DefaultConfig()
	c.Models = append(c.Models,
		ModelConfig{Name: "mlp", Path: "/m/mlp.onnx", Batching: &BatchingConfig{MaxBatchSize: 32,
			MaxQueueDelay: Duration{500 * time.Microsecond}, PreferredBatchSizes: []int{16, 32}, MaxQueueSize: 10, Instances: 3}},
		ModelConfig{Name: "plain", Path: "/m/plain.onnx"})
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	have, err := ParseConfig(out, "yaml-output")
	if err != nil {
		t.Fatalf("YAML() output does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(plainConfig(have), plainConfig(c)) {
		t.Errorf("round trip through\n%s\nhave %+v\nwant %+v", out, plainConfig(have), plainConfig(c))
	}
	if !strings.Contains(string(out), "preferred_batch_sizes: [16, 32]") {
		t.Errorf("YAML() writes preferred sizes as a block list:\n%s", out)
	}
}
