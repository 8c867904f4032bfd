package front

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

func TestFrontAnswers503UntilReady(t *testing.T) {
	cfg := config.DefaultConfig()
	m, b, _ := newTestFront(cfg)
	b.notReady = "not ready: starting"
	for _, path := range []string{"/v2/health/ready", "/v2/models/default/infer"} {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI(path)
		if strings.HasSuffix(path, "/infer") {
			ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		}
		m.serveFront(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusServiceUnavailable {
			t.Errorf("%s before ready = %d, want 503", path, ctx.Response.StatusCode())
		}
		if !strings.Contains(string(ctx.Response.Body()), `"error"`) {
			t.Errorf("%s: body %q is not a V2 error", path, ctx.Response.Body())
		}
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v2/health/live")
	m.serveFront(&ctx)
	if ctx.Response.StatusCode() != fasthttp.StatusOK {
		t.Errorf("live = %d, want 200 (the master is alive while it boots)", ctx.Response.StatusCode())
	}
}
