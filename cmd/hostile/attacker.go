package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// The attack clients run in a process of their own, at a low priority
// (nice), standing in for the remote machines an attacker would use: on a
// small host sharing its cores with the server, attackers at the server's
// priority would measure the CPU contention of the test rig as much as
// the server. The process is this binary (or the test binary) re-executed
// with roleEnv set; it attacks until its stdin closes, then prints the
// answers it got as JSON.
const (
	roleEnv    = "HOSTILE_ROLE"
	attackEnv  = "HOSTILE_ATTACK"
	clientsEnv = "HOSTILE_CLIENTS"
	addrEnv    = "HOSTILE_ADDR"
	grpcEnv    = "HOSTILE_GRPC_ADDR"
	streamsEnv = "HOSTILE_GRPC_STREAMS"
	floodEnv   = "HOSTILE_FLOOD_BYTES"
	maxBodyEnv = "HOSTILE_MAX_BODY"
)

// attackerMain runs when roleEnv is "attacker"; it returns the exit code.
func attackerMain() int {
	as, err := selectAttacks(os.Getenv(attackEnv))
	if err != nil || len(as) != 1 {
		fmt.Fprintln(os.Stderr, "hostile attacker: want one attack in", attackEnv, err)
		return 2
	}
	clients, err := strconv.Atoi(os.Getenv(clientsEnv))
	if err != nil || clients < 1 {
		fmt.Fprintln(os.Stderr, "hostile attacker: bad", clientsEnv)
		return 2
	}
	flood, err := strconv.ParseInt(os.Getenv(floodEnv), 10, 64)
	if err != nil || flood < 1 {
		fmt.Fprintln(os.Stderr, "hostile attacker: bad", floodEnv)
		return 2
	}
	maxBody, err := strconv.ParseInt(os.Getenv(maxBodyEnv), 10, 64)
	if err != nil || maxBody < 1 {
		fmt.Fprintln(os.Stderr, "hostile attacker: bad", maxBodyEnv)
		return 2
	}
	streams, err := strconv.Atoi(os.Getenv(streamsEnv))
	if err != nil || streams < 1 {
		fmt.Fprintln(os.Stderr, "hostile attacker: bad", streamsEnv)
		return 2
	}
	t := target{addr: os.Getenv(addrEnv), grpcAddr: os.Getenv(grpcEnv), floodBytes: flood, maxBody: maxBody, maxStreams: streams,
		grpcFrom: as[0].grpcFrom}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes it to stop us
		cancel()
	}()
	rec := newAnswers()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			as[0].client(ctx, t, rec)
		}()
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(rec.counts()); err != nil {
		return 1
	}
	return 0
}

// attackProcess is a running attacker.
type attackProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   chan map[string]int
	err   chan error
}

// startAttacker starts the attack's clients in their own process at the
// given niceness (0 = the suite's own priority).
func startAttacker(a attack, clients int, t target, nice int) (*attackProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("nice", "-n", strconv.Itoa(nice), exe)
	cmd.Env = append(os.Environ(), roleEnv+"=attacker", attackEnv+"="+a.name,
		clientsEnv+"="+strconv.Itoa(clients), addrEnv+"="+t.addr, floodEnv+"="+strconv.FormatInt(t.floodBytes, 10),
		maxBodyEnv+"="+strconv.FormatInt(t.maxBody, 10), grpcEnv+"="+t.grpcAddr, streamsEnv+"="+strconv.Itoa(t.maxStreams))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the attacker process: %w", err)
	}
	p := &attackProcess{cmd: cmd, stdin: stdin, out: make(chan map[string]int, 1), err: make(chan error, 1)}
	go func() {
		var counts map[string]int
		if err := json.NewDecoder(stdout).Decode(&counts); err != nil {
			p.err <- fmt.Errorf("the attacker process reported nothing: %w", err)
			return
		}
		p.out <- counts
	}()
	return p, nil
}

// stop ends the attack and returns its answers; the process is killed if
// it has not reported within timeout.
func (p *attackProcess) stop(timeout time.Duration) (map[string]int, error) {
	_ = p.stdin.Close()
	defer func() { _ = p.cmd.Wait() }()
	select {
	case counts := <-p.out:
		return counts, nil
	case err := <-p.err:
		return nil, err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		return nil, errors.New("the attacker process did not stop within " + timeout.String())
	}
}
