package main

import (
	"sync"

	"github.com/valyala/fasthttp"
)

// inferHeaderLength is the binary extension's header naming the JSON
// part's length.
const inferHeaderLength = "Inference-Header-Content-Length"

// httpAnswer is one answer kept: what the supervisor said to the first
// request of its method and path.
type httpAnswer struct {
	status      int
	contentType []byte
	inferLength []byte // Inference-Header-Content-Length, if any
	body        []byte
}

// httpFloor answers HTTP requests from the answers it keeps.
type httpFloor struct {
	upstream *fasthttp.HostClient
	answers  sync.Map // "METHOD path" -> *httpAnswer
}

func newHTTPFloor(upstream string) *httpFloor {
	return &httpFloor{upstream: &fasthttp.HostClient{Addr: upstream, MaxResponseBodySize: 64 << 20}}
}

func (f *httpFloor) handle(ctx *fasthttp.RequestCtx) {
	key := string(ctx.Method()) + " " + string(ctx.Path())
	a, ok := f.answers.Load(key)
	if !ok {
		fetched, err := f.ask(&ctx.Request)
		if err != nil {
			ctx.Error(`{"error":"grpcfloor: `+err.Error()+`"}`, fasthttp.StatusBadGateway)
			return
		}
		a, _ = f.answers.LoadOrStore(key, fetched)
	}
	ans := a.(*httpAnswer)
	ctx.SetStatusCode(ans.status)
	ctx.Response.Header.SetContentTypeBytes(ans.contentType)
	if ans.inferLength != nil {
		ctx.Response.Header.SetBytesV(inferHeaderLength, ans.inferLength)
	}
	ctx.SetBody(ans.body)
}

// ask sends req to the supervisor and returns its answer to keep.
func (f *httpFloor) ask(req *fasthttp.Request) (*httpAnswer, error) {
	up := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(up)
	req.CopyTo(up)
	up.SetHost(f.upstream.Addr)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := f.upstream.Do(up, resp); err != nil {
		return nil, err
	}
	a := &httpAnswer{
		status:      resp.StatusCode(),
		contentType: append([]byte(nil), resp.Header.ContentType()...),
		body:        append([]byte(nil), resp.Body()...),
	}
	if v := resp.Header.Peek(inferHeaderLength); v != nil {
		a.inferLength = append([]byte(nil), v...)
	}
	return a, nil
}
