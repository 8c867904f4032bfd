package front

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The master reads an admitted request's whole body before it forwards
// it, as nginx does by default (a large one in two steps, with the prefix
// check of precheck.go between them): a client trickling its body then holds a
// connection and budget bytes of the master, bounded by the body timeout,
// never a prep worker's connection. The body lands in a buffer of its own
// (never fasthttp's pooled body buffers; a large one is a mapping, see
// bodybuf.go), freed when the request is answered, so a burst of large
// bodies leaves nothing parked in a pool or waiting for a GC.

// Errors that end a body read; the handler answers each with its status.
var (
	errBodyTimeout  = errors.New("request body not received in time (limits.body_timeout, limits.body_min_rate)")
	errBodyTooLarge = errors.New("chunked request body is larger than max_body_bytes")
	errBodyBudget   = errors.New("server busy: request bodies in flight fill limits.max_body_bytes_in_flight; retry later")
	errBodyBroken   = errors.New("request body ended early or is malformed")
)

// firstBodyBuffer is how much is allocated before the body shows it is
// really arriving: a client that declares 64 MiB and sends a few bytes
// costs this, not its declaration.
const firstBodyBuffer = 64 << 10

// bodyReader reads one request body under the body deadline.
type bodyReader struct {
	f        *Front
	c        *config.Config
	v        *verdict
	ctx      *fasthttp.RequestCtx
	body     bodyBuf
	chunkedN int64 // bytes allocated for a chunked body, all reserved
	checked  bool  // the prefix check (precheck.go) was asked
}

// receiveBody reads the body the verdict admitted and sets it on the
// request; an error says why not (see the err* values above). The verdict
// owns the buffer from then on: finish detaches it from the request and
// frees it. A failed read frees what it had at once (nothing else saw it).
func (f *Front) receiveBody(ctx *fasthttp.RequestCtx, c *config.Config, v *verdict) error {
	if !v.hasBody {
		return nil
	}
	br := &bodyReader{f: f, c: c, v: v, ctx: ctx}
	if err := br.read(ctx.RequestBodyStream()); err != nil {
		br.body.free()
		return err
	}
	v.attachBody(&ctx.Request, br.body)
	return nil
}

func (br *bodyReader) read(r io.Reader) error {
	if r == nil {
		return errBodyBroken
	}
	start := br.v.admitted
	for {
		buf := br.body.b
		if br.v.length >= 0 && int64(len(buf)) == br.v.length {
			return nil
		}
		if len(buf) == cap(buf) {
			if !br.checked && len(buf) >= firstBodyBuffer {
				// The first buffer is full and more is to come.
				br.checked = true
				if r := br.f.checkPrefix(br.ctx, br.v, buf); r != nil {
					return r
				}
			}
			if err := br.grow(); err != nil {
				return err
			}
		}
		if err := br.ctx.Conn().SetReadDeadline(br.deadline(start)); err != nil {
			return fmt.Errorf("%w: %v", errBodyBroken, err)
		}
		buf = br.body.b
		n, err := r.Read(buf[len(buf):cap(buf)])
		br.body.b = buf[:len(buf)+n]
		br.f.bodies.read.Add(int64(n))
		switch {
		case errors.Is(err, io.EOF):
			if br.v.length >= 0 && int64(len(br.body.b)) != br.v.length {
				return errBodyBroken
			}
			return nil
		case isTimeoutErr(err):
			return errBodyTimeout
		case err != nil:
			return fmt.Errorf("%w: %v", errBodyBroken, err)
		}
	}
}

// deadline is when the next byte must have arrived: body_timeout after
// the header, extended by one second per body_min_rate bytes received
// (Apache's mod_reqtimeout body=...,MinRate=...). A client that stalls is
// cut after body_timeout; one that trickles falls behind the rate and is
// cut too; an honest slow link keeps going.
func (br *bodyReader) deadline(start time.Time) time.Time {
	l := br.c.Limits
	d := l.BodyTimeout.Duration
	if rate := int64(l.BodyMinRate); rate > 0 {
		d += time.Duration(float64(len(br.body.b)) / float64(rate) * float64(time.Second))
	}
	return start.Add(d)
}

// grow makes room for more of the body. A body of known length gets a
// small buffer first, then one of exactly its length once it overflows
// that; a chunked body doubles, reserving every buffer it allocates, up to
// max_body_bytes.
func (br *bodyReader) grow() error {
	size := int64(cap(br.body.b))
	var next int64
	if br.v.length >= 0 {
		next = min(br.v.length, firstBodyBuffer)
		if size >= next {
			next = br.v.length
		}
	} else {
		limit := int64(br.c.MaxBodyBytes)
		if size > limit {
			return errBodyTooLarge
		}
		next = min(max(2*size, 16<<10), limit+1)
		if br.f.chargeChunked(br.v, br.chunkedN+next) != nil {
			return errBodyBudget
		}
		br.chunkedN += next
	}
	br.body.grow(int(next))
	return nil
}

// isTimeoutErr reports a deadline that passed.
func isTimeoutErr(err error) bool {
	var t interface{ Timeout() bool }
	return err != nil && errors.As(err, &t) && t.Timeout()
}

// bodyRefusal is the answer to a body read that failed.
func bodyRefusal(err error) admission.Refusal {
	var pr *prefixRefusal
	switch {
	case errors.As(err, &pr):
		return pr.r
	case errors.Is(err, errBodyTimeout):
		return admission.Refusal{Status: fasthttp.StatusRequestTimeout, Msg: err.Error()}
	case errors.Is(err, errBodyTooLarge):
		return admission.Refusal{Status: fasthttp.StatusRequestEntityTooLarge, Msg: err.Error()}
	case errors.Is(err, errBodyBudget):
		return admission.Refusal{Status: fasthttp.StatusServiceUnavailable, Header: fasthttp.HeaderRetryAfter, Value: "1", Msg: err.Error()}
	}
	return admission.Refusal{Status: fasthttp.StatusBadRequest, Msg: err.Error()}
}
