package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
)

// Outcomes of one attack request besides an HTTP status code.
const (
	outcomeCut     = "cut"     // the server closed the connection without answering
	outcomeHeld    = "held"    // still open, unanswered, when the phase ended
	outcomeRefused = "refused" // the TCP connection could not be opened
)

// answers counts the outcomes an attack's requests got.
type answers struct {
	mu sync.Mutex
	n  map[string]int
}

func newAnswers() *answers { return &answers{n: map[string]int{}} }

func (a *answers) add(outcome string) {
	a.mu.Lock()
	a.n[outcome]++
	a.mu.Unlock()
}

func (a *answers) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.n)
}

// formatClosed is a row's client-closed count, "-" where the binary
// counts none.
func formatClosed(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// formatAnswers is "401x1200 cut x3", most frequent first.
func formatAnswers(n map[string]int) string {
	keys := slices.Collect(maps.Keys(n))
	slices.SortFunc(keys, func(a, b string) int { return n[b] - n[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// unclear lists the outcomes that are not a clear refusal: anything but a
// 4xx, a 503, a cut connection, one held open within the server's limits,
// a request its client hung up on (the hang-up attacks), or a refused connection (the listener's backlog is full), or, for the
// gRPC attacks, a gRPC status other than OK, a stream reset or a GOAWAY,
// besides the attack's allowed answers.
func unclear(n map[string]int, allowed []string) []string {
	var bad []string
	for k := range n {
		switch k {
		case outcomeCut, outcomeHeld, outcomeRefused, outcomeHungUp, "503":
			continue
		}
		if slices.Contains(allowed, k) || grpcRefusal(k) {
			continue
		}
		if code, err := strconv.Atoi(k); err == nil && code >= 400 && code < 500 {
			continue
		}
		bad = append(bad, k)
	}
	slices.Sort(bad)
	return bad
}

// grpcRefusal reports whether a gRPC attack's outcome (grpcOutcome) is a
// refusal: a status other than OK, a reset stream, a GOAWAY.
func grpcRefusal(k string) bool {
	if code, ok := strings.CutPrefix(k, "grpc "); ok {
		return code != codes.OK.String()
	}
	return strings.HasPrefix(k, "rst ") || strings.HasPrefix(k, "goaway ")
}
