package config

import (
	"testing"
	"time"
)

func TestAutoscaleKeys(t *testing.T) {
	c := mustParseConfig(t, "prep:\n  min_workers: 2\n  max_workers: 4\n  autoscale:\n    up_after: 2s\n    up_busy: 1.5\n", "t.yaml")
	if !c.Prep.Autoscaled() || c.Prep.MinWorkers != 2 || c.Prep.MaxWorkers != 4 || c.Prep.Ceiling() != 4 {
		t.Errorf("prep = %+v, want autoscaled between 2 and 4", c.Prep)
	}
	if a := c.Prep.Autoscale; a.UpAfter.Duration != 2*time.Second || a.UpBusy != 1.5 || a.DownAfter.Duration != 30*time.Second {
		t.Errorf("autoscale = %+v, want up_after 2s, up_busy 1.5 and the default down_after 30s", a)
	}
	if DefaultConfig().Prep.Autoscaled() {
		t.Error("the default config autoscales; want prep.max_workers 0 (off)")
	}
}

func TestAutoscaleErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		yaml string
		want []string
	}{
		"min over max": {"prep:\n  min_workers: 5\n  max_workers: 4\n",
			[]string{`t.yaml:2: prep.min_workers: 5 is out of range (use 1 to prep.max_workers, 4)`}},
		"workers outside": {"prep:\n  workers: 8\n  max_workers: 4\n",
			[]string{`t.yaml:2: prep.workers: 8 is outside prep.min_workers 1 to prep.max_workers 4`}},
		"max negative": {"prep:\n  max_workers: -1\n",
			[]string{`t.yaml:2: prep.max_workers: -1 is out of range`}},
		"busy inverted": {"prep:\n  max_workers: 2\n  autoscale:\n    up_busy: 0.3\n",
			[]string{`t.yaml:4: prep.autoscale.up_busy: 0.3 must be greater than down_busy 0.4`}},
		"interval zero": {"prep:\n  max_workers: 2\n  autoscale:\n    interval: 0s\n",
			[]string{`t.yaml:4: prep.autoscale.interval: 0s is too short`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}

func TestPrepCount(t *testing.T) {
	fixed := PrepConfig{Workers: 3}
	auto := PrepConfig{MinWorkers: 2, MaxWorkers: 5}
	start := PrepConfig{Workers: 4, MinWorkers: 2, MaxWorkers: 5}
	for _, tt := range []struct {
		p             PrepConfig
		current, want int
	}{
		{fixed, 0, 3}, {fixed, 5, 3}, // without autoscaling: the config's count
		{auto, 0, 2}, {start, 0, 4}, // a new pool: workers, else min_workers
		{auto, 3, 3}, {auto, 1, 2}, {auto, 9, 5}, // a running pool keeps its size, within bounds
	} {
		if have := tt.p.Count(tt.current); have != tt.want {
			t.Errorf("%+v.Count(%d) = %d, want %d", tt.p, tt.current, have, tt.want)
		}
	}
}
