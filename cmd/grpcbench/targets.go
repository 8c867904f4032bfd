package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// input is one model input filled with bytes of its datatype's size.
type input struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
	data     []byte
}

var dtypeSize = map[string]int{"BOOL": 1, "INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "FP16": 2, "BF16": 2,
	"INT32": 4, "UINT32": 4, "FP32": 4, "INT64": 8, "UINT64": 8, "FP64": 8}

// modelInputs reads the model's inputs from GET /v2/models/{m} and fills
// each with a constant pattern (dynamic dimensions = 1).
func modelInputs(addr, model string) ([]input, error) {
	code, body, err := fasthttp.Get(nil, "http://"+addr+"/v2/models/"+model)
	if err != nil || code != fasthttp.StatusOK {
		return nil, fmt.Errorf("model metadata of %q: %d %s %v", model, code, body, err)
	}
	var md struct{ Inputs []input }
	if err := json.Unmarshal(body, &md); err != nil {
		return nil, err
	}
	for i := range md.Inputs {
		in := &md.Inputs[i]
		n := dtypeSize[in.Datatype]
		if n == 0 {
			return nil, fmt.Errorf("input %q: datatype %s is not numeric", in.Name, in.Datatype)
		}
		for k, d := range in.Shape {
			if d < 0 {
				in.Shape[k] = 1
			}
			n *= int(in.Shape[k])
		}
		in.data = make([]byte, n)
		for k := range in.data {
			in.data[k] = byte(k%61) & 0x3f // small, finite floats of any width
		}
	}
	return md.Inputs, nil
}

// httpTarget posts the binary-extension request.
type httpTarget struct {
	c      *fasthttp.HostClient
	uri    string
	body   []byte
	header string
}

func newHTTPTarget(addr, model string, ins []input) *httpTarget {
	type entry struct {
		input
		Parameters map[string]int `json:"parameters"`
	}
	var entries []entry
	var raw []byte
	for _, in := range ins {
		entries = append(entries, entry{in, map[string]int{"binary_data_size": len(in.data)}})
		raw = append(raw, in.data...)
	}
	h, _ := json.Marshal(map[string]any{"inputs": entries, "parameters": map[string]bool{"binary_data_output": true}})
	return &httpTarget{c: &fasthttp.HostClient{Addr: addr, MaxConns: 4096}, uri: "http://" + addr + "/v2/models/" + model + "/infer",
		body: append(h, raw...), header: strconv.Itoa(len(h))}
}

func (t *httpTarget) name() string { return "http" }

func (t *httpTarget) end() {}

func (t *httpTarget) infer(int) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(t.uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set("Inference-Header-Content-Length", t.header)
	req.SetBodyRaw(t.body)
	if err := t.c.DoTimeout(req, resp, 30*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode(), resp.Body())
	}
	return nil
}

// grpcTarget sends ModelInfer with raw_input_contents, round-robin over
// its connections.
type grpcTarget struct {
	conns   []*grpc.ClientConn
	clients []pb.GRPCInferenceServiceClient
	req     *pb.ModelInferRequest
	next    chan int
}

func newGRPCTarget(addr, model string, ins []input, n int) (*grpcTarget, error) {
	t := &grpcTarget{req: &pb.ModelInferRequest{ModelName: model}, next: make(chan int, 1)}
	t.next <- 0
	for _, in := range ins {
		t.req.Inputs = append(t.req.Inputs, &pb.ModelInferRequest_InferInputTensor{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape})
		t.req.RawInputContents = append(t.req.RawInputContents, in.data)
	}
	for range max(n, 1) {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		t.conns = append(t.conns, c)
		t.clients = append(t.clients, pb.NewGRPCInferenceServiceClient(c))
	}
	return t, nil
}

func (t *grpcTarget) name() string { return "grpc" }

func (t *grpcTarget) end() {}

// client is the next connection's client, round-robin.
func (t *grpcTarget) client() pb.GRPCInferenceServiceClient {
	i := <-t.next
	t.next <- (i + 1) % len(t.clients)
	return t.clients[i]
}

func (t *grpcTarget) infer(int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := t.client().ModelInfer(ctx, t.req)
	if err == nil && len(r.RawOutputContents) == 0 {
		err = fmt.Errorf("an answer without raw_output_contents")
	}
	return err
}

// streamTarget sends the same request over ModelStreamInfer: each client
// opens one stream (on the connections round-robin) and sends a request,
// then waits for its answer, one at a time, until the run ends.
type streamTarget struct {
	*grpcTarget
	mu      sync.Mutex
	streams map[int]pb.GRPCInferenceService_ModelStreamInferClient
	cancels []context.CancelFunc
}

func (t *streamTarget) name() string { return "grpc-stream" }

func (t *streamTarget) stream(i int) (pb.GRPCInferenceService_ModelStreamInferClient, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.streams[i]; s != nil {
		return s, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := t.client().ModelStreamInfer(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if t.streams == nil {
		t.streams = map[int]pb.GRPCInferenceService_ModelStreamInferClient{}
	}
	t.streams[i] = s
	t.cancels = append(t.cancels, cancel)
	return s, nil
}

func (t *streamTarget) infer(i int) error {
	s, err := t.stream(i)
	if err != nil {
		return err
	}
	if err := s.Send(t.req); err != nil {
		return err
	}
	r, err := s.Recv()
	switch {
	case err != nil:
		return err
	case r.GetErrorMessage() != "":
		return fmt.Errorf("stream error: %s", r.GetErrorMessage())
	case len(r.GetInferResponse().GetRawOutputContents()) == 0:
		return fmt.Errorf("an answer without raw_output_contents")
	}
	return nil
}

// end closes the run's streams.
func (t *streamTarget) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.streams {
		_ = s.CloseSend()
	}
	for _, c := range t.cancels {
		c()
	}
	t.streams, t.cancels = nil, nil
}

func (t *grpcTarget) close() {
	for _, c := range t.conns {
		c.Close()
	}
}
