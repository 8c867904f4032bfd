package systemd

import (
	"path/filepath"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestEngineCacheUnderStateDirectory: TensorRT's engine cache defaults to
// a relative directory, which the workers resolve against the working
// directory they inherit from the master; the unit makes that the state
// directory, which systemd creates and keeps writable under
// ProtectSystem=strict, so engines survive restarts and upgrades.
func TestEngineCacheUnderStateDirectory(t *testing.T) {
	cache := config.DefaultProviders().TensorRT.EngineCacheDir
	if cache == "" || filepath.IsAbs(cache) {
		t.Fatalf("default engine_cache_dir %q; want a directory relative to the state directory", cache)
	}
	d := directives(t)
	state, wd := d["StateDirectory"], d["WorkingDirectory"]
	if len(state) != 1 || len(wd) != 1 || wd[0] != filepath.Join("/var/lib", state[0]) {
		t.Errorf("StateDirectory=%v, WorkingDirectory=%v; want the working directory to be the state directory, "+
			"where engine_cache_dir %q lands", state, wd, cache)
	}
}
