package launch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

var (
	// ErrExited: the process exited before /v2/health/ready answered 200.
	ErrExited = errors.New("the supervisor exited before it was ready")
	// ErrNotReady: /v2/health/ready did not answer 200 within the timeout.
	ErrNotReady = errors.New("the supervisor was not ready in time")
)

// pollTimeout bounds one readiness request, so a server that accepts and
// never answers costs a poll, not the whole wait.
const pollTimeout = 5 * time.Second

// WaitReady polls GET /v2/health/ready every interval until it answers
// 200. It returns an error wrapping ErrExited as soon as the process
// exits, or ErrNotReady after timeout or timeout/interval+1 polls,
// whichever comes first. Either error names the log to read.
func (s *Server) WaitReady(timeout, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	maxPolls := int(timeout/max(interval, time.Millisecond)) + 1
	tick := time.NewTicker(max(interval, time.Millisecond))
	defer tick.Stop()
	for poll := 1; poll <= maxPolls; poll++ {
		if s.readyOnce(ctx) {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%w (%v); read its log %s", ErrExited, s.waitErr, s.Log)
		case <-ctx.Done():
			return fmt.Errorf("%w: no 200 from /v2/health/ready within %s (%d polls); read its log %s",
				ErrNotReady, timeout, poll, s.Log)
		case <-tick.C:
		}
	}
	return fmt.Errorf("%w: no 200 from /v2/health/ready in %d polls; read its log %s", ErrNotReady, maxPolls, s.Log)
}

// readyOnce makes one readiness request, bounded by pollTimeout and ctx.
func (s *Server) readyOnce(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+"/v2/health/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
