package grpcfront

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		status int
		retry  bool
		ctxErr error
		want   codes.Code
	}{
		{400, false, nil, codes.InvalidArgument},
		{431, false, nil, codes.InvalidArgument},
		{422, false, nil, codes.InvalidArgument}, // a quarantined poison request
		{401, false, nil, codes.Unauthenticated},
		{403, false, nil, codes.PermissionDenied},
		{404, false, nil, codes.NotFound},
		{405, false, nil, codes.Unimplemented},
		{408, false, nil, codes.DeadlineExceeded},
		{413, false, nil, codes.ResourceExhausted},
		{429, true, nil, codes.ResourceExhausted},
		{503, true, nil, codes.ResourceExhausted}, // full queue, arena, max_in_flight, budget
		{503, false, nil, codes.Unavailable},      // not ready, draining, no worker
		{504, false, nil, codes.DeadlineExceeded},
		{500, false, nil, codes.Internal},
		{502, false, nil, codes.Internal}, // the infer worker exited: not UNAVAILABLE, which retry policies resend
		{503, true, context.DeadlineExceeded, codes.DeadlineExceeded},
		{400, false, fmt.Errorf("wrapped: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{502, false, context.Canceled, codes.Canceled},
	} {
		if got := Code(tc.status, tc.retry, tc.ctxErr); got != tc.want {
			t.Errorf("Code(%d, retry %v, %v) = %s, want %s", tc.status, tc.retry, tc.ctxErr, got, tc.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	if got := errorMessage(400, []byte(`{"error":"input \"x\": bad"}`)); got != `input "x": bad` {
		t.Errorf("V2 error: %q", got)
	}
	if got := errorMessage(502, []byte("<html>")); got != "HTTP 502 Bad Gateway" {
		t.Errorf("not a V2 error: %q", got)
	}
}
