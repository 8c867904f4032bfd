package grpcfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc/codes"
)

// Code is the gRPC code of a V2 HTTP answer, as Triton maps its errors.
// retryAfter is whether the answer carried Retry-After: the master and the
// workers send it with every 503 that means "busy" (a full queue or arena,
// max_in_flight, the body budget), never with one that means "not
// serving" (not ready, draining, no worker). ctxErr is the RPC's context
// error: once its deadline has passed, any failure is DEADLINE_EXCEEDED.
func Code(httpStatus int, retryAfter bool, ctxErr error) codes.Code {
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return codes.DeadlineExceeded
	}
	if errors.Is(ctxErr, context.Canceled) {
		return codes.Canceled
	}
	switch httpStatus {
	case fasthttp.StatusBadRequest, fasthttp.StatusRequestHeaderFieldsTooLarge,
		fasthttp.StatusUnprocessableEntity: // a quarantined poison request: its input is the fault
		return codes.InvalidArgument
	case fasthttp.StatusUnauthorized:
		return codes.Unauthenticated
	case fasthttp.StatusForbidden:
		return codes.PermissionDenied
	case fasthttp.StatusNotFound:
		return codes.NotFound
	case fasthttp.StatusMethodNotAllowed, fasthttp.StatusNotImplemented:
		return codes.Unimplemented
	case fasthttp.StatusRequestTimeout, fasthttp.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case fasthttp.StatusRequestEntityTooLarge, fasthttp.StatusTooManyRequests:
		return codes.ResourceExhausted
	case fasthttp.StatusServiceUnavailable:
		if retryAfter {
			return codes.ResourceExhausted
		}
		return codes.Unavailable
	}
	// 502 (the infer worker exited during the request) stays INTERNAL,
	// not UNAVAILABLE, which gRPC retry policies resend: a poison
	// request must not be resent by the client library.
	return codes.Internal
}

// errorMessage is the V2 error body's message, or the status when the
// body is not a V2 error.
func errorMessage(httpStatus int, body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return fmt.Sprintf("HTTP %d %s", httpStatus, fasthttp.StatusMessage(httpStatus))
}
