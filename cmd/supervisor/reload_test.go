package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestReloadsUnderLoad reloads five times under load, each time changing
// settings that every worker's spec depends on (and twice the prep pool's
// size), then once with an invalid config: no request may fail, each
// valid reload returns only once the new generation serves, and the
// invalid one leaves the old config serving with the error's line.
func TestReloadsUnderLoad(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	l := startLoad(in, 4, "/v2/models/mlp/infer", body)
	l.waitFor(t, 200)
	l.phase.Store(events)

	base, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	// Each step's config: intra_op_threads changes the infer workers'
	// spec, max_body_bytes the prep workers'.
	steps := []struct{ threads, body, prep string }{
		{"2", "9MiB", "2"}, {"1", "8MiB", "3"}, {"2", "9MiB", "3"}, {"1", "8MiB", "2"}, {"2", "9MiB", "2"},
	}
	for i, step := range steps {
		cfg := strings.NewReplacer("intra_op_threads: 1", "intra_op_threads: "+step.threads,
			"max_body_bytes: 8MiB", "max_body_bytes: "+step.body,
			"prep:\n  workers: 2", "prep:\n  workers: "+step.prep).Replace(string(base))
		writeConfig(t, in, cfg)
		before := in.status()
		out, err := in.cli("reload")
		if err != nil {
			t.Fatalf("reload %d: %v\n%s", i+1, err, out)
		}
		after := in.status()
		if after.Generation != before.Generation+1 {
			t.Fatalf("reload %d: generation %d, want %d", i+1, after.Generation, before.Generation+1)
		}
		if want := 1 + int(step.prep[0]-'0'); len(after.Workers) != want {
			t.Fatalf("reload %d: %d workers, want %d", i+1, len(after.Workers), want)
		}
		old := map[string]int{}
		for _, w := range before.Workers {
			old[w.Name] = w.PID
		}
		for _, w := range after.Workers {
			// The CLI returns once the new generation serves: every worker
			// is ready and of the new generation.
			if w.State != "ready" || w.Generation != after.Generation || w.PID == old[w.Name] {
				t.Fatalf("reload %d: worker %s is %s, generation %d, pid %d (was %d); want a new ready worker of generation %d\n%s",
					i+1, w.Name, w.State, w.Generation, w.PID, old[w.Name], after.Generation, out)
			}
		}
		l.waitFor(t, 20)
	}

	// An invalid config: the CLI fails with the line, nothing changes.
	bad := string(base) + "not_a_key: 1\n"
	writeConfig(t, in, bad)
	line := strings.Count(bad, "\n")
	before := in.status()
	out, err := in.cli("reload")
	if err == nil {
		t.Fatalf("reload of an invalid config succeeded:\n%s", out)
	}
	if want := fmt.Sprintf("supervisor.yaml:%d", line); !strings.Contains(out, want) {
		t.Fatalf("reload error does not name %s:\n%s", want, out)
	}
	after := in.status()
	if after.Generation != before.Generation || after.LastReload == nil || after.LastReload.OK {
		t.Fatalf("after an invalid reload: generation %d (was %d), last reload %+v", after.Generation, before.Generation, after.LastReload)
	}
	for i, w := range after.Workers {
		if w.PID != before.Workers[i].PID {
			t.Fatalf("an invalid reload replaced %s", w.Name)
		}
	}
	l.waitFor(t, 50)
	l.finish(t, "5 reloads and 1 invalid reload")
}

func writeConfig(t *testing.T, in *instance, cfg string) {
	t.Helper()
	if err := os.WriteFile(in.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reloadEdited replaces the first old in in's config with new, which must
// be there, and reloads.
func reloadEdited(t *testing.T, in *instance, old, new string) {
	t.Helper()
	cfg, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), old) {
		t.Fatalf("the config has no %q to replace:\n%s", old, cfg)
	}
	writeConfig(t, in, strings.Replace(string(cfg), old, new, 1))
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("supervisor reload: %v\n%s", err, out)
	}
}
