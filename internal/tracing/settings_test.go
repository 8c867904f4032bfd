package tracing

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSamplerRateAndCount(t *testing.T) {
	s := NewSampler(Settings{Level: LevelTimestamps, Rate: 3, Count: 2})
	var got []int
	for i := 1; i <= 12; i++ {
		if s.Sample("m") {
			got = append(got, i)
		}
	}
	if len(got) != 2 || got[0] != 3 || got[1] != 6 {
		t.Fatalf("sampled requests %v, want [3 6] (one in 3, at most 2)", got)
	}
	if c := s.Get("").Count; c != 0 {
		t.Fatalf("trace_count after 2 traces = %d, want 0", c)
	}
}

func TestSamplerOffSamplesNothing(t *testing.T) {
	s := NewSampler(Settings{Level: LevelOff, Rate: 1, Count: -1})
	for range 5 {
		if s.Sample("m") {
			t.Fatal("OFF sampled a request")
		}
	}
}

func TestSamplerModelOverride(t *testing.T) {
	s := NewSampler(Settings{Level: LevelOff, Rate: 1000, Count: -1})
	if err := s.Update("m", []byte(`{"trace_level":["TIMESTAMPS"],"trace_rate":"1","trace_count":"1"}`)); err != nil {
		t.Fatal(err)
	}
	if !s.Sample("m") || s.Sample("m") {
		t.Fatal("model m: want its first request traced and no more (trace_count 1)")
	}
	if s.Sample("other") {
		t.Fatal("another model followed m's override")
	}
	if g := s.Get(""); g.Level != LevelOff || g.Rate != 1000 {
		t.Fatalf("global settings changed by a model's: %+v", g)
	}
	// Clearing the model's level makes it follow the global OFF again.
	if err := s.Update("m", []byte(`{"trace_level":null,"trace_count":null}`)); err != nil {
		t.Fatal(err)
	}
	if m := s.Get("m"); m.Level != LevelOff || m.Count != -1 || m.Rate != 1 {
		t.Fatalf("after clearing: %+v, want OFF, count -1 (global), rate 1 (still m's)", m)
	}
	var j map[string]any
	if err := json.Unmarshal(s.JSON("m"), &j); err != nil || j[KeyRate] != "1" || j[KeyMode] != Mode {
		t.Fatalf("JSON = %v, %v", j, err)
	}
}

func TestSamplerRefusals(t *testing.T) {
	s := NewSampler(Defaults())
	for body, want := range map[string]string{
		`{"trace_level":["TENSORS"]}`:           "not served",
		`{"trace_level":["OFF","TIMESTAMPS"]}`:  "contradict",
		`{"trace_level":["LOUD"]}`:              "want OFF or TIMESTAMPS",
		`{"trace_rate":"0"}`:                    "at least 1",
		`{"trace_rate":"x"}`:                    "at least 1",
		`{"trace_count":"-2"}`:                  "-1 (no bound)",
		`{"log_frequency":"-1"}`:                "from 0",
		`{"trace_file":"/tmp/x"}`:               "never to a file",
		`{"trace_mode":"triton"}`:               "opentelemetry",
		`{"trace_sauce":"1"}`:                   "unknown trace setting",
		`{"trace_rate":null}`:                   "cannot be cleared",
		`[1]`:                                   "not a JSON object",
		`{"trace_rate":{"a":1}}`:                "want a string",
		`{"trace_rate":"5","trace_count":"-7"}`: "trace_count",
	} {
		err := s.Update("", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Update(%s) = %v, want an error containing %q", body, err, want)
		}
	}
	if g := s.Get(""); g != Defaults() {
		t.Fatalf("a refused POST changed the settings: %+v", g)
	}
}
