package lb

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"
)

// An answer is read whole into memory before its caller sees it, so a
// caller that must bound what it holds (the master's body budget, a prep
// worker's share of the large answers) cannot charge an answer once it
// has it: by then it is held, uncounted, one per request in flight. An
// AnswerGate is asked from the answer's header instead, before a byte of
// its body is read: it may reserve the declared length (or refuse it),
// and an answer it refuses is never read: its upstream connection is
// closed (the worker sees the hang-up and stops writing), and the call
// returns an error wrapping ErrAnswerRefused and the gate's own.
//
// The lb itself holds no accounting: what a gate reserves is the
// caller's (the master's front: an internal/budget charge in its
// answers lane), which the caller releases once the answer is written
// (a refused answer holds nothing).

// An AnswerGate decides on a backend's answer from its header (status,
// Content-Length: -1 chunked, -2 until the connection closes), before
// its body is read. An error refuses the answer. It runs on the
// caller's goroutine, at most once per answer read; an answer with no
// body (1xx, 204, 304, HEAD) is not asked about.
type AnswerGate func(h *fasthttp.ResponseHeader) error

// ErrAnswerRefused is returned (wrapped, with the gate's error) by
// DoRouteFor and ServeHTTPFor when the request's AnswerGate refused the
// answer: the request was served but its answer was dropped unread and
// its upstream connection closed. ServeHTTPFor answers 503 with the
// gate's error as the V2 message.
var ErrAnswerRefused = errors.New("the answer was refused from its header")

// readAnswer reads resp from br as fasthttp's ReadLimitBody does (limit
// bounds the body, 0 none), asking gate (nil: none) about the body once
// its header is in.
func readAnswer(br *bufio.Reader, resp *fasthttp.Response, limit int, gate AnswerGate) error {
	if gate == nil || resp.SkipBody {
		return resp.ReadLimitBody(br, limit)
	}
	resp.SkipBody = true // the header (after any 1xx) only
	err := resp.ReadLimitBody(br, limit)
	resp.SkipBody = false
	if err != nil || bodiless(resp.StatusCode()) {
		return err
	}
	if err := gate(&resp.Header); err != nil {
		return &answerRefused{err}
	}
	if err := resp.ReadBody(br, limit); err != nil {
		return err
	}
	if resp.Header.ContentLength() != -1 {
		return nil
	}
	if err := resp.Header.ReadTrailer(br); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("reading the trailer of a chunked answer: %w", err)
	}
	return nil
}

// bodiless reports whether an answer of status has no body (RFC 9110
// 6.4.1: 1xx, 204 and 304).
func bodiless(status int) bool {
	return status < 200 && status >= 100 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified
}

// answerRefused is a gate's refusal: it is ErrAnswerRefused and the
// gate's error, and reads as the gate's error.
type answerRefused struct{ err error }

func (e *answerRefused) Error() string   { return e.err.Error() }
func (e *answerRefused) Unwrap() []error { return []error{ErrAnswerRefused, e.err} }

// refusalMessage is the gate's own message in err, a refusal.
func refusalMessage(err error) string {
	var r *answerRefused
	if errors.As(err, &r) {
		return r.err.Error()
	}
	return err.Error()
}
