package front

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/status"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"github.com/supervisor-dev/supervisor/worker"
)

// The prefix check. A large body is read in two steps (bodyread.go): a
// first buffer of firstBodyBuffer bytes, then the rest. Between them, the
// master sends what it holds to a prep worker (least connections, through
// the lb like the request itself, with the request's id), which judges it
// with the rules it applies to whole requests, in its decoders' prefix
// modes (worker.PrefixHeader has the contract). A refusal (400, 413) is
// answered at once: nothing more of the body is read, its buffer and
// budget are freed and the connection is closed, as for a refusal from
// the header. So a body that is wrong from its first bytes (garbage JSON,
// a BYTES flood's shape, an image bomb's header) costs the master and the
// prep worker its first 64 KiB, not all of it.
//
// The check is advisory: any other answer, no answer within
// prefixCheckTimeout (every prep worker busy or hung, one dying), or no
// prep worker at all lets the body go on as before, and the whole
// request is judged again by the prep worker that serves it. It costs a
// legitimate large request one round trip to a prep worker with 64 KiB.
//
// A body with a Content-Encoding other than identity is not checked: its
// first bytes are not the request's. (Decompressing the prefix as far as
// it goes, then checking that, fits here when compressed bodies are.)

// prefixCheckTimeout bounds the wait for a prep worker's answer to a
// prefix check (the request's own deadline may shorten it). A prefix
// takes milliseconds to judge; a worker slower than this is busy, and the
// request goes on rather than wait for it.
const prefixCheckTimeout = time.Second

// bodyCounts count what the master did with request bodies, for /metrics.
type bodyCounts struct {
	read                                  atomic.Int64 // body bytes read from clients
	checksPassed, checksRefused, checksNA atomic.Int64 // prefix checks by outcome
	clientClosed                          atomic.Int64 // requests abandoned: their client hung up (clientgone.go)
	answersRefused                        atomic.Int64 // answers dropped for the body budget (answerbudget.go)
}

// prefixRefusal is a body refused by its prefix check: a body-read error
// that carries the prep worker's answer.
type prefixRefusal struct{ r admission.Refusal }

func (e *prefixRefusal) Error() string { return e.r.Msg }

// checkPrefix asks a prep worker about the body's first bytes, prefix;
// it returns the refusal to answer with, or nil to go on reading.
func (f *Front) checkPrefix(ctx *fasthttp.RequestCtx, v *verdict, prefix []byte) *prefixRefusal {
	if enc := ctx.Request.Header.ContentEncoding(); len(enc) > 0 && string(enc) != "identity" {
		return nil
	}
	if sysshm.Mentions(prefix) {
		// The master reads the regions once the body is whole
		// (sharedmemory.go); a prep worker refuses their parameters
		// (v2.RegionNotRead). Only a JSON header the master will read
		// goes on.
		if ctx.Request.Header.Peek(inferenceHeaderLength) == nil && v.length > sysshm.MaxHeader {
			err := sysshm.HeaderTooLarge(int(v.length))
			return &prefixRefusal{admission.Refusal{Status: fasthttp.StatusBadRequest, Msg: err.Error()}}
		}
		return nil
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	f.proxy.SetRequestID(ctx) // the same id on the check and on the request
	ctx.Request.Header.CopyTo(&req.Header)
	req.Header.ResetConnectionClose()
	req.Header.Del(fasthttp.HeaderExpect)
	req.Header.Del(fasthttp.HeaderTransferEncoding)
	req.Header.Set(worker.PrefixHeader, strconv.FormatInt(v.length, 10))
	req.SetBodyRaw(prefix) // read synchronously by Do, which returns before the buffer can change
	req.Header.SetContentLength(len(prefix))
	deadline := time.Now().Add(prefixCheckTimeout)
	if !v.deadline.IsZero() && v.deadline.Before(deadline) {
		deadline = v.deadline
	}
	err := f.proxy.Do(req, resp, deadline)
	req.ResetBody() // detach the body buffer before the request goes back to its pool
	status := resp.StatusCode()
	switch {
	case err == nil && status == fasthttp.StatusNoContent:
		f.bodies.checksPassed.Add(1)
		return nil
	case err != nil || (status != fasthttp.StatusBadRequest && status != fasthttp.StatusRequestEntityTooLarge):
		f.bodies.checksNA.Add(1)
		f.log.Debug().Err(err).Int("status", status).Msg("prefix check not answered; the body goes on")
		return nil
	}
	f.bodies.checksRefused.Add(1)
	var e struct{ Error string }
	if json.Unmarshal(resp.Body(), &e) != nil || e.Error == "" {
		e.Error = "request refused from its first bytes"
	}
	return &prefixRefusal{admission.Refusal{Status: status, Msg: e.Error}}
}

// snapshot is the counters now, for /metrics.
func (b *bodyCounts) snapshot() status.BodyCounts {
	return status.BodyCounts{Read: b.read.Load(), ChecksPassed: b.checksPassed.Load(),
		ChecksRefused: b.checksRefused.Load(), ChecksNone: b.checksNA.Load(), ClientClosed: b.clientClosed.Load(),
		AnswersRefused: b.answersRefused.Load()}
}
