package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// TestStopDuringReload runs `supervisor reload` and `supervisor stop`
// together, 20 times, each on a fresh master with the tiny MLP and one
// infer worker. The reload replaces every worker and resizes the prep
// pool: it grows from one to two (a slot added while the master stops)
// or shrinks from two to one (a slot the reload stops while the shutdown
// stops it too). Half the rounds start both commands at once; the others
// send the stop once the reload has spawned a replacement, so the stop
// lands mid-boot. Each time the master must exit 0 without a panic, stop
// must succeed, and no process started by that master may be left: none
// exists when the master has exited (every worker is reaped first), and
// none appears afterwards.
func TestStopDuringReload(t *testing.T) {
	rounds := envInt("STOP_RELOAD_ROUNDS", 20)
	for i := range rounds {
		grow, midBoot := i%2 == 0, i%4 >= 2
		name := fmt.Sprintf("%d/grow=%t/midBoot=%t", i, grow, midBoot)
		t.Run(name, func(t *testing.T) { stopDuringReload(t, grow, midBoot, "") })
	}
}

// TestStopDuringReloadWithDrainGrace: a stop that arrives while a reload
// boots workers first keeps serving for drain_grace (ready 503), the
// reload going on, then shuts down as without a grace: the stop succeeds
// and no worker the reload started outlives the master.
func TestStopDuringReloadWithDrainGrace(t *testing.T) {
	for _, grow := range []bool{true, false} {
		t.Run(fmt.Sprintf("grow=%t", grow), func(t *testing.T) {
			stopDuringReload(t, grow, true, "drain_grace: 2s\n")
		})
	}
}

// stopDuringReload stops the master (supervisor stop) during a reload that
// replaces every worker; extra is appended to the instance's config.
func stopDuringReload(t *testing.T, grow, midBoot bool, extra string) {
	tag := fmt.Sprintf("SV_STOP_RELOAD_TAG=%d.%d", os.Getpid(), time.Now().UnixNano())
	from, to := 2, 1
	if grow {
		from, to = 1, 2
	}
	in := startInstance(t, options{prepWorkers: from, inferWorkers: 1, modelNames: []string{"mlp"}, env: []string{tag}, extra: extra})
	base, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	// Both pools' specs change: the reload replaces every worker.
	writeConfig(t, in, strings.NewReplacer("intra_op_threads: 1", "intra_op_threads: 2",
		"max_body_bytes: 8MiB", "max_body_bytes: 9MiB",
		fmt.Sprintf("prep:\n  workers: %d", from), fmt.Sprintf("prep:\n  workers: %d", to)).Replace(string(base)))
	spawned := strings.Count(in.log.String(), `"worker spawned"`)

	reloaded := make(chan cliResult, 1)
	go func() { out, err := in.cli("reload"); reloaded <- cliResult{out, err} }()
	if midBoot {
		pollUntil(t, 30*time.Second, "the reload spawns a replacement worker", func() bool {
			return strings.Count(in.log.String(), `"worker spawned"`) > spawned
		})
	}
	stopped := make(chan cliResult, 1)
	go func() { out, err := in.cli("stop"); stopped <- cliResult{out, err} }()
	if extra != "" {
		waitLameDuck(t, in)
	}

	in.waitExit(60 * time.Second)
	if left := taggedProcesses(t, tag); len(left) > 0 {
		t.Errorf("processes of this master still exist when it has exited: %v", left)
	}
	for _, r := range []struct {
		what string
		ch   chan cliResult
	}{{"stop", stopped}, {"reload", reloaded}} {
		select {
		case res := <-r.ch:
			// A reload may finish before the stop, or be refused or cut
			// short by it; a stop must succeed.
			if r.what == "stop" && res.err != nil {
				t.Errorf("supervisor stop: %v\n%s", res.err, res.out)
			}
			t.Logf("%s: err %v: %s", r.what, res.err, strings.TrimSpace(res.out))
		case <-time.After(30 * time.Second):
			t.Errorf("supervisor %s has not returned 30s after the master exited", r.what)
		}
	}
	if log := in.log.String(); strings.Contains(log, "panic") {
		t.Errorf("the master panicked:\n%s", log)
	}
	pollUntil(t, 10*time.Second, "no process of this master exists", func() bool {
		return len(taggedProcesses(t, tag)) == 0
	})
	if _, err := os.Stat(in.runtimeDir); !os.IsNotExist(err) {
		t.Errorf("runtime dir %s still exists after the master exited", in.runtimeDir)
	}
	if boards := shm.Boards(in.runtimeDir); len(boards) > 0 {
		t.Errorf("scoreboards left behind: %v", boards)
	}
}

type cliResult struct {
	out string
	err error
}

// taggedProcesses lists the live (not zombie) processes whose environment
// holds tag: the master and every worker it spawned inherit it.
func taggedProcesses(t *testing.T, tag string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte(tag)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if !processExited(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestStopDuringStartup stops a master while its workers boot (the control
// socket answers before they are ready): it exits 0 without waiting for
// every first boot to finish, and leaves no process behind.
func TestStopDuringStartup(t *testing.T) {
	tag := fmt.Sprintf("SV_STOP_STARTUP_TAG=%d.%d", os.Getpid(), time.Now().UnixNano())
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 1, modelNames: []string{"default"}, env: []string{tag}, noWait: true})
	sock := control.SocketPath(in.runtimeDir)
	pollUntil(t, 60*time.Second, "the control socket exists", func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})
	out, err := in.cli("stop")
	if err != nil {
		t.Fatalf("supervisor stop during startup: %v\n%s", err, out)
	}
	in.waitExit(60 * time.Second)
	if left := taggedProcesses(t, tag); len(left) > 0 {
		t.Errorf("processes of this master still exist when it has exited: %v", left)
	}
	t.Logf("stopped during startup: %t", strings.Contains(in.log.String(), `"stopped during startup"`))
}

// TestStopDuringUpgrade sends `supervisor stop` while an upgrade's new
// master boots: the stop is for the instance, so both masters and every
// worker of either must be gone once the stop has returned, none left
// serving.
func TestStopDuringUpgrade(t *testing.T) {
	tag := fmt.Sprintf("SV_STOP_UPGRADE_TAG=%d.%d", os.Getpid(), time.Now().UnixNano())
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 1, modelNames: []string{"mlp"}, env: []string{tag}})
	starts := strings.Count(in.log.String(), `"placement planned"`)
	upgraded := make(chan cliResult, 1)
	go func() { out, err := in.cli("upgrade"); upgraded <- cliResult{out, err} }()
	pollUntil(t, 30*time.Second, "the new master starts", func() bool {
		return strings.Count(in.log.String(), `"placement planned"`) > starts
	})
	out, err := in.cli("stop")
	if err != nil {
		t.Fatalf("supervisor stop during an upgrade: %v\n%s", err, out)
	}
	in.waitExit(60 * time.Second)
	select {
	case res := <-upgraded:
		t.Logf("upgrade: err %v: %s", res.err, strings.TrimSpace(res.out))
	case <-time.After(30 * time.Second):
		t.Error("supervisor upgrade has not returned 30s after the master exited")
	}
	// The new master answers its stop last, then exits: allow it that.
	pollUntil(t, 10*time.Second, "no process of either master exists", func() bool {
		return len(taggedProcesses(t, tag)) == 0
	})
	if _, err := os.Stat(in.runtimeDir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(in.runtimeDir)
		t.Errorf("runtime dir %s still exists after both masters stopped (%d entries)", in.runtimeDir, len(entries))
	}
}
