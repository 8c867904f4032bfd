package front

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront"
)

const authOrderKey = "auth-order-key-0123456789"

// knownModels stands in for the master's repository routes: a load or
// unload of a model of the config answers 200, any other model 404, as
// the master's does.
type knownModels struct{}

func (knownModels) Routes(path string) bool {
	return strings.HasPrefix(path, "/v2/repository/models/") &&
		(strings.HasSuffix(path, "/load") || strings.HasSuffix(path, "/unload"))
}

func (knownModels) ServeRepository(ctx *fasthttp.RequestCtx, _ []byte) (int, string) {
	if strings.HasPrefix(string(ctx.Path()), "/v2/repository/models/mlp/") {
		return fasthttp.StatusOK, ""
	}
	return fasthttp.StatusNotFound, "unknown model"
}

func startAuthFront(t *testing.T) *frontHarness {
	return startFront(t, func(c *config.Config) { c.Auth.APIKeys = []string{authOrderKey} },
		func(o *Options) { o.Repository = knownModels{} })
}

// TestNoKeyLearnsNoModel: without a valid key, every model route (the
// model's metadata, readiness, config, statistics, inference, a version's
// routes, the repository's load and unload) answers the same 401, header
// and body, whether the model is served or not; so nobody without a key
// can list the models by their 404s. With the key, the unknown model
// gets its 404 (its readiness 400, as Triton answers).
func TestNoKeyLearnsNoModel(t *testing.T) {
	h := startAuthFront(t)
	routes := []struct{ method, path string }{
		{"GET", "/v2/models/%s"},
		{"GET", "/v2/models/%s/ready"},
		{"GET", "/v2/models/%s/config"},
		{"GET", "/v2/models/%s/stats"},
		{"GET", "/v2/models/%s/versions/1"},
		{"POST", "/v2/models/%s/infer"},
		{"POST", "/v2/models/%s/versions/1/infer"},
		{"POST", "/v2/repository/models/%s/load"},
		{"POST", "/v2/repository/models/%s/unload"},
	}
	type answer struct {
		status        int
		body, www     string
		contentLength int64
	}
	do := func(method, path, key string) answer {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+h.addr+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		if method == "GET" {
			req.Body, req.ContentLength = nil, 0
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), resp.Header.Get("WWW-Authenticate"), resp.ContentLength}
	}
	for _, r := range routes {
		for _, key := range []string{"", "wrong-key-0123456789abcdef"} {
			known := do(r.method, strings.Replace(r.path, "%s", "mlp", 1), key)
			unknown := do(r.method, strings.Replace(r.path, "%s", "nope", 1), key)
			if known.status != fasthttp.StatusUnauthorized || known.www == "" || known != unknown {
				t.Errorf("%s %s with key %q: served model %+v, unknown model %+v; want the same 401 for both", r.method, r.path, key, known, unknown)
			}
		}
		want := fasthttp.StatusNotFound
		if strings.HasSuffix(r.path, "/ready") {
			want = fasthttp.StatusBadRequest // Triton's not ready
		}
		if a := do(r.method, strings.Replace(r.path, "%s", "nope", 1), authOrderKey); a.status != want {
			t.Errorf("%s %s with the key: unknown model answered %d %s, want %d", r.method, r.path, a.status, a.body, want)
		}
	}
}

// TestNoKeyLearnsNoModelOverGRPC: the same over gRPC (the master's wiring
// of grpcfront: Front.ServeInternal, AdmitMessage, the body budget):
// every model RPC without a valid key is UNAUTHENTICATED with the same
// message for a served model and an unknown one; with the key the
// unknown model is NOT_FOUND (ModelReady: ready false).
func TestNoKeyLearnsNoModelOverGRPC(t *testing.T) {
	h := startAuthFront(t)
	c := serveGRPC(t, grpcfront.Options{Handler: h.fr.ServeInternal, Admit: h.fr.adm.AdmitMessage, Budget: h.fr.adm, MaxMessageBytes: 1 << 20,
		Timeouts: grpcfront.Timeouts{Message: 5 * time.Second, StreamIdle: time.Minute, Write: 10 * time.Second}})
	rpcs := map[string]func(ctx context.Context, model string) error{
		"ModelMetadata": func(ctx context.Context, m string) error {
			_, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: m})
			return err
		},
		"ModelReady": func(ctx context.Context, m string) error {
			r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: m})
			if err == nil && !r.Ready {
				// Not served is ready: false, as Triton answers; read as
				// NOT_FOUND for the comparison below.
				return status.Error(codes.NotFound, "ready: false")
			}
			return err
		},
		"ModelConfig": func(ctx context.Context, m string) error {
			_, err := c.ModelConfig(ctx, &pb.ModelConfigRequest{Name: m})
			return err
		},
		"ModelStatistics": func(ctx context.Context, m string) error {
			_, err := c.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: m})
			return err
		},
		"ModelInfer": func(ctx context.Context, m string) error {
			_, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: m, Inputs: []*pb.ModelInferRequest_InferInputTensor{
				{Name: "x", Datatype: "UINT8", Shape: []int64{1}}}, RawInputContents: [][]byte{{1}}})
			return err
		},
		"RepositoryModelLoad": func(ctx context.Context, m string) error {
			_, err := c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: m})
			return err
		},
		"RepositoryModelUnload": func(ctx context.Context, m string) error {
			_, err := c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: m})
			return err
		},
	}
	for name, rpc := range rpcs {
		for _, key := range []string{"", "wrong-key-0123456789abcdef"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if key != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
			}
			known, unknown := status.Convert(rpc(ctx, "mlp")), status.Convert(rpc(ctx, "nope"))
			cancel()
			if known.Code() != codes.Unauthenticated || known.Code() != unknown.Code() || known.Message() != unknown.Message() {
				t.Errorf("%s with key %q: served model %v, unknown model %v; want the same UNAUTHENTICATED for both", name, key, known, unknown)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", authOrderKey)
		if st := status.Convert(rpc(ctx, "nope")); st.Code() != codes.NotFound {
			t.Errorf("%s with the key: unknown model %v, want NOT_FOUND", name, st)
		}
		cancel()
	}
}
