package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/valyala/fasthttp"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// Triton's system shared memory extension: each client has its own
// /dev/shm object holding its inputs (registered as region "<tag>-in-i")
// and one its outputs are written into ("<tag>-out-i"); the request names
// the regions instead of carrying the bytes. The regions are registered
// over HTTP once, before the runs, and are the same for both protocols.

// shmClients are the per-client regions, for n clients.
type shmClients struct {
	httpAddr  string
	tag       string
	ins       []input
	inOffsets []int
	outs      []output
	outOffset []int
	paths     []string
	n         int
}

// output is a model output and its bytes (dynamic dimensions = 1).
type output struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
	size     int
}

// modelOutputs reads the model's outputs from GET /v2/models/{m}.
func modelOutputs(addr, model string) ([]output, error) {
	code, body, err := fasthttp.Get(nil, "http://"+addr+"/v2/models/"+model)
	if err != nil || code != fasthttp.StatusOK {
		return nil, fmt.Errorf("model metadata of %q: %d %s %v", model, code, body, err)
	}
	var md struct{ Outputs []output }
	if err := json.Unmarshal(body, &md); err != nil {
		return nil, err
	}
	for i := range md.Outputs {
		o := &md.Outputs[i]
		o.size = max(dtypeSize[o.Datatype], 1)
		for _, d := range o.Shape {
			o.size *= int(max(d, 1))
		}
	}
	return md.Outputs, nil
}

// newSHMClients creates and registers the regions of n clients.
func newSHMClients(httpAddr, model string, ins []input, n int) (*shmClients, error) {
	outs, err := modelOutputs(httpAddr, model)
	if err != nil {
		return nil, err
	}
	s := &shmClients{httpAddr: httpAddr, tag: fmt.Sprintf("grpcbench-%d", os.Getpid()), ins: ins, outs: outs, n: n}
	var inData []byte
	for _, in := range ins {
		s.inOffsets = append(s.inOffsets, len(inData))
		inData = append(inData, in.data...)
	}
	outSize := 0
	for _, o := range outs {
		s.outOffset = append(s.outOffset, outSize)
		outSize += o.size
	}
	for i := range n {
		for _, r := range []struct {
			kind string
			data []byte
		}{{"in", inData}, {"out", make([]byte, outSize)}} {
			name := fmt.Sprintf("%s-%s-%d", s.tag, r.kind, i)
			path := filepath.Join("/dev/shm", name)
			if err := os.WriteFile(path, r.data, 0o600); err != nil {
				s.close()
				return nil, err
			}
			s.paths = append(s.paths, path)
			body := fmt.Sprintf(`{"key":"/%s","offset":0,"byte_size":%d}`, name, len(r.data))
			if err := s.post("/v2/systemsharedmemory/region/"+name+"/register", body); err != nil {
				s.close()
				return nil, err
			}
		}
	}
	return s, nil
}

func (s *shmClients) post(path, body string) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + s.httpAddr + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetBodyString(body)
	if err := fasthttp.DoTimeout(req, resp, 10*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode(), resp.Body())
	}
	return nil
}

// close unregisters the regions and removes the objects.
func (s *shmClients) close() {
	for i := range s.n {
		for _, kind := range []string{"in", "out"} {
			_ = s.post(fmt.Sprintf("/v2/systemsharedmemory/region/%s-%s-%d/unregister", s.tag, kind, i), "")
		}
	}
	for _, p := range s.paths {
		os.Remove(p)
	}
}

func (s *shmClients) region(kind string, i int) string {
	return fmt.Sprintf("%s-%s-%d", s.tag, kind, i)
}

// httpSHMTarget posts a JSON request naming client i's regions.
type httpSHMTarget struct {
	s      *shmClients
	c      *fasthttp.HostClient
	uri    string
	bodies [][]byte
}

func newHTTPSHMTarget(s *shmClients, model string) *httpSHMTarget {
	t := &httpSHMTarget{s: s, c: &fasthttp.HostClient{Addr: s.httpAddr, MaxConns: 4096}, uri: "http://" + s.httpAddr + "/v2/models/" + model + "/infer"}
	for i := range s.n {
		var ins, outs []map[string]any
		for k, in := range s.ins {
			ins = append(ins, map[string]any{"name": in.Name, "datatype": in.Datatype, "shape": in.Shape, "parameters": map[string]any{
				"shared_memory_region": s.region("in", i), "shared_memory_byte_size": len(in.data), "shared_memory_offset": s.inOffsets[k]}})
		}
		for k, o := range s.outs {
			outs = append(outs, map[string]any{"name": o.Name, "parameters": map[string]any{
				"shared_memory_region": s.region("out", i), "shared_memory_byte_size": o.size, "shared_memory_offset": s.outOffset[k]}})
		}
		b, _ := json.Marshal(map[string]any{"inputs": ins, "outputs": outs})
		t.bodies = append(t.bodies, b)
	}
	return t
}

func (t *httpSHMTarget) name() string { return "http-shm" }

func (t *httpSHMTarget) end() {}

func (t *httpSHMTarget) infer(i int) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(t.uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(t.bodies[i])
	if err := t.c.DoTimeout(req, resp, 30*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode(), resp.Body())
	}
	return nil
}

// grpcSHMTarget sends ModelInfer naming client i's regions.
type grpcSHMTarget struct {
	g    *grpcTarget
	reqs []*pb.ModelInferRequest
}

func newGRPCSHMTarget(s *shmClients, g *grpcTarget, model string) *grpcSHMTarget {
	t := &grpcSHMTarget{g: g}
	str := func(v string) *pb.InferParameter {
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: v}}
	}
	num := func(v int) *pb.InferParameter {
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: int64(v)}}
	}
	for i := range s.n {
		r := &pb.ModelInferRequest{ModelName: model}
		for k, in := range s.ins {
			r.Inputs = append(r.Inputs, &pb.ModelInferRequest_InferInputTensor{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape,
				Parameters: map[string]*pb.InferParameter{"shared_memory_region": str(s.region("in", i)),
					"shared_memory_byte_size": num(len(in.data)), "shared_memory_offset": num(s.inOffsets[k])}})
		}
		for k, o := range s.outs {
			r.Outputs = append(r.Outputs, &pb.ModelInferRequest_InferRequestedOutputTensor{Name: o.Name,
				Parameters: map[string]*pb.InferParameter{"shared_memory_region": str(s.region("out", i)),
					"shared_memory_byte_size": num(o.size), "shared_memory_offset": num(s.outOffset[k])}})
		}
		t.reqs = append(t.reqs, r)
	}
	return t
}

func (t *grpcSHMTarget) name() string { return "grpc-shm" }

func (t *grpcSHMTarget) end() {}

func (t *grpcSHMTarget) infer(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := t.g.client().ModelInfer(ctx, t.reqs[i])
	return err
}
