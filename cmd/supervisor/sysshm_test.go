package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

const (
	shmKeyA = "shm-test-key-a-0123456789abcdef"
	shmKeyB = "shm-test-key-b-0123456789abcdef"
)

// shmObject creates a /dev/shm object of size bytes for this test and
// returns its key ("/name") and path.
func shmObject(t *testing.T, tag string, size int) (key, path string) {
	t.Helper()
	name := fmt.Sprintf("svtest-%d-%s", os.Getpid(), tag)
	path = filepath.Join("/dev/shm", name)
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return "/" + name, path
}

// shmCall sends a request with key's API key and returns the status and
// body.
func shmCall(t *testing.T, in *instance, method, path, key, body string) (int, string) {
	t.Helper()
	code, b, _ := in.do(method, path, []byte(body), map[string]string{"X-API-Key": key})
	return code, string(b)
}

func wantCall(t *testing.T, what string, code int, body string, wantCode int, wantIn string) {
	t.Helper()
	if code != wantCode || !strings.Contains(body, wantIn) {
		t.Errorf("%s: %d %s; want %d containing %q", what, code, body, wantCode, wantIn)
	}
}

func register(t *testing.T, in *instance, apiKey, name, shmKey string, offset, size int) (int, string) {
	t.Helper()
	return shmCall(t, in, "POST", "/v2/systemsharedmemory/region/"+name+"/register", apiKey,
		fmt.Sprintf(`{"key":%q,"offset":%d,"byte_size":%d}`, shmKey, offset, size))
}

// shmInferBody is the MLP request with x in region in (offset inOff) and
// y asked into region out.
func shmInferBody(in string, inOff int, out string) string {
	return fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"shared_memory_region":%q,"shared_memory_byte_size":64,"shared_memory_offset":%d}}],`+
		`"outputs":[{"name":"y","parameters":{"shared_memory_region":%q,"shared_memory_byte_size":16}}]}`, in, inOff, out)
}

// TestSystemSharedMemory drives Triton's system shared memory extension
// on a real supervisor with two API keys, over HTTP and gRPC: register,
// status and unregister; an infer request whose input is read from a
// region and whose output is written into one, answered the bytes the
// same request sent inline gets; the refusals (a link, a '/', sizes, a
// region of another key, the per-key bound, an output too large for its
// region) and an object truncated or unlinked under the server, answered
// 400 while every process lives on.
func TestSystemSharedMemory(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		extra: "auth:\n  api_keys: [\"" + shmKeyA + "\", \"" + shmKeyB + "\"]\nlimits:\n  shared_memory_regions: 3\n"})
	x := seq(16, 1)
	want := httpBinaryInferKey(t, in, fp32Bytes(x), shmKeyA)

	inKey, inPath := shmObject(t, "in", 4096+64)
	outKey, outPath := shmObject(t, "out", 16)
	if err := os.WriteFile(inPath, append(make([]byte, 4096), fp32Bytes(x)...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := register(t, in, shmKeyA, "in", inKey, 4096, 64)
	wantCall(t, "register in", code, body, 200, "")
	code, body = register(t, in, shmKeyA, "out", outKey, 0, 16)
	wantCall(t, "register out", code, body, 200, "")

	t.Run("status", func(t *testing.T) {
		code, body := shmCall(t, in, "GET", "/v2/systemsharedmemory/status", shmKeyA, "")
		var list []struct {
			Name, Key string
			Offset    uint64
			ByteSize  uint64 `json:"byte_size"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 2 || list[0].Name != "in" || list[0].Key != inKey || list[0].Offset != 4096 || list[0].ByteSize != 64 {
			t.Errorf("status: %d %s", code, body)
		}
		code, body = shmCall(t, in, "GET", "/v2/systemsharedmemory/status", shmKeyB, "")
		wantCall(t, "another key's status", code, body, 200, "[]")
		code, body = shmCall(t, in, "GET", "/v2/systemsharedmemory/region/in/status", shmKeyB, "")
		wantCall(t, "another key's region", code, body, 404, "not registered")
		code, body = shmCall(t, in, "GET", "/v2/systemsharedmemory/status", "", "")
		wantCall(t, "no key", code, body, 401, "API key")
		code, body = shmCall(t, in, "POST", "/v2/systemsharedmemory/status", shmKeyA, "")
		wantCall(t, "POST status", code, body, 405, "GET")
		code, body = shmCall(t, in, "POST", "/v2/systemsharedmemory/frob", shmKeyA, "")
		wantCall(t, "no route", code, body, 404, "register")
	})

	t.Run("infer through regions", func(t *testing.T) {
		code, b, hdr := in.post("/v2/models/mlp/infer", []byte(shmInferBody("in", 0, "out")), map[string]string{"X-API-Key": shmKeyA})
		if code != 200 {
			t.Fatalf("infer: %d %s", code, b)
		}
		if hdr.Get("Inference-Header-Content-Length") != "" {
			t.Errorf("an answer with every output in a region has a binary part: %s", hdr)
		}
		var resp struct {
			Outputs []struct {
				Name       string
				Data       json.RawMessage
				Parameters map[string]any
			}
		}
		if err := json.Unmarshal(b, &resp); err != nil || len(resp.Outputs) != 1 || resp.Outputs[0].Data != nil ||
			resp.Outputs[0].Parameters["shared_memory_region"] != "out" || resp.Outputs[0].Parameters["shared_memory_byte_size"] != float64(16) {
			t.Errorf("answer %s (%v); want y carrying region out and 16 bytes, no data", b, err)
		}
		got, _ := os.ReadFile(outPath)
		if !bytes.Equal(got, want) {
			t.Errorf("region out holds %x; the inline request answered %x", got, want)
		}
		// The input was read and the output written by the prep worker
		// itself, with the master's descriptors: the master sent
		// references, not bytes.
		for _, p := range []string{inPath, outPath} {
			if !prepHolds(t, in, p) {
				t.Errorf("no prep worker holds a descriptor of %s; its bytes were to be copied there", p)
			}
		}
		// A body past the first 64 KiB the prep worker judges before
		// the rest is read (the prefix check): the regions are still
		// the master's to read.
		os.WriteFile(outPath, make([]byte, 16), 0o600)
		large := strings.TrimSuffix(shmInferBody("in", 0, "out"), "}") + `,"id":"` + strings.Repeat("p", 100<<10) + `"}`
		code, b, _ = in.post("/v2/models/mlp/infer", []byte(large), map[string]string{"X-API-Key": shmKeyA})
		if got, _ := os.ReadFile(outPath); code != 200 || !bytes.Equal(got, want) {
			t.Errorf("a 100 KiB request through regions: %d %.300s, region out %x", code, b, got)
		}
		// Past sysshm.MaxHeader of JSON, refused from its prefix.
		huge := strings.TrimSuffix(shmInferBody("in", 0, "out"), "}") + `,"id":"` + strings.Repeat("p", 2<<20) + `"}`
		code, b, _ = in.post("/v2/models/mlp/infer", []byte(huge), map[string]string{"X-API-Key": shmKeyA})
		if code != 400 || !strings.Contains(string(b), "send the other inputs as binary data") {
			t.Errorf("a 2 MiB JSON request through regions: %d %.300s; want 400", code, b)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		dir := t.TempDir()
		secret := filepath.Join(dir, "secret")
		os.WriteFile(secret, make([]byte, 64), 0o600)
		linkKey, linkPath := "/"+filepath.Base(inPath)+"-link", inPath+"-link"
		if err := os.Symlink(secret, linkPath); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(linkPath) })
		code, body := register(t, in, shmKeyA, "l", linkKey, 0, 16)
		wantCall(t, "a link", code, body, 400, "symbolic link")
		code, body = register(t, in, shmKeyA, "l", "/../../"+secret, 0, 16)
		wantCall(t, "a path", code, body, 400, "no '/'")
		boards, _ := filepath.Glob("/dev/shm/supervisor-*.scoreboard")
		if len(boards) == 0 {
			t.Fatal("no scoreboard in /dev/shm")
		}
		code, body = register(t, in, shmKeyA, "l", "/"+filepath.Base(boards[0]), 0, 16)
		wantCall(t, "a scoreboard", code, body, 400, "server's own objects")
		code, body = register(t, in, shmKeyA, "l", inKey, 4096, 65)
		wantCall(t, "too large", code, body, 400, "fewer than offset 4096 + byte_size 65")
		code, body = register(t, in, shmKeyA, "l", inKey, 1<<62, 1<<62)
		wantCall(t, "overflow", code, body, 400, "")
		code, body = register(t, in, shmKeyA, "in", inKey, 0, 16)
		wantCall(t, "twice", code, body, 400, "already registered")
		code, body = register(t, in, shmKeyA, "third", inKey, 0, 16)
		wantCall(t, "third", code, body, 200, "")
		code, body = register(t, in, shmKeyA, "fourth", inKey, 0, 16)
		wantCall(t, "over the bound", code, body, 400, "limits.shared_memory_regions")
		code, body = register(t, in, shmKeyB, "fourth", inKey, 0, 16)
		wantCall(t, "another key's own bound", code, body, 200, "")
		code, body = shmCall(t, in, "POST", "/v2/models/mlp/infer", shmKeyB, shmInferBody("in", 0, "out"))
		wantCall(t, "another key's region", code, body, 400, "not registered with this API key")
		code, body = shmCall(t, in, "POST", "/v2/models/mlp/infer", shmKeyA, shmInferBody("in", 4, "out"))
		wantCall(t, "past the region", code, body, 400, "do not fit")
		code, body = shmCall(t, in, "POST", "/v2/models/mlp/infer", shmKeyA, strings.Replace(shmInferBody("in", 0, "out"), `"shared_memory_byte_size":16`, `"shared_memory_byte_size":8`, 1))
		wantCall(t, "output larger than its room", code, body, 400, "more than the 8")
		code, body = shmCall(t, in, "POST", "/v2/models/mlp/infer", shmKeyA, strings.Replace(shmInferBody("in", 0, "out"), `"shared_memory_byte_size":64`, `"shared_memory_byte_size":32`, 1))
		wantCall(t, "bytes short of the shape", code, body, 400, "binary_data_size is 32")
		// The master's references are the master's: a client naming
		// another key's region by its id, device and inode in the
		// internal header reads nothing of it.
		var st syscall.Stat_t
		if err := syscall.Stat(inPath, &st); err != nil {
			t.Fatal(err)
		}
		forged := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":64}}]}`)
		code, b, _ := in.post("/v2/models/mlp/infer", forged, map[string]string{"X-API-Key": shmKeyB,
			"Inference-Header-Content-Length": strconv.Itoa(len(forged)),
			"Supervisor-Regions":              fmt.Sprintf("0:1:%d:%d:4096:64:in:%s", st.Dev, st.Ino, inKey)})
		wantCall(t, "a forged reference", code, string(b), 400, "binary_data_size")
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write([]byte(shmInferBody("in", 0, "out")))
		zw.Close()
		code, b, _ = in.post("/v2/models/mlp/infer", gz.Bytes(), map[string]string{"X-API-Key": shmKeyA, "Content-Encoding": "gzip"})
		wantCall(t, "a compressed body", code, string(b), 400, "only in an infer request without Content-Encoding")
		shmCall(t, in, "POST", "/v2/systemsharedmemory/region/third/unregister", shmKeyA, "")
		shmCall(t, in, "POST", "/v2/systemsharedmemory/unregister", shmKeyB, "")
	})

	t.Run("object changed under the server", func(t *testing.T) {
		// The input's object is checked by the prep worker that reads
		// it (the master checks only the region's bounds): truncated
		// there, answered 400, and no process dies.
		pids := workerPIDs(t, in)
		if err := os.Truncate(inPath, 100); err != nil {
			t.Fatal(err)
		}
		code, body := shmCall(t, in, "POST", "/v2/models/mlp/infer", shmKeyA, shmInferBody("in", 0, "out"))
		wantCall(t, "truncated", code, body, 400, "holds 100 bytes")
		if err := os.Remove(outPath); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(inPath, append(make([]byte, 4096), fp32Bytes(x)...), 0o600)
		code, body = shmCall(t, in, "POST", "/v2/models/mlp/infer", shmKeyA, shmInferBody("in", 0, "out"))
		wantCall(t, "unlinked", code, body, 400, "was unlinked")
		if code, b, _ := in.get("/v2/health/ready"); code != 200 {
			t.Fatalf("ready after: %d %s", code, b)
		}
		if after := workerPIDs(t, in); !slices.Equal(pids, after) {
			t.Errorf("workers %v became %v", pids, after)
		}
		shmCall(t, in, "POST", "/v2/systemsharedmemory/region/out/unregister", shmKeyA, "")
	})

	t.Run("grpc", func(t *testing.T) {
		c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
		ctx := withKey(t, "x-api-key", shmKeyA)
		gout, goutPath := shmObject(t, "gout", 16)
		if _, err := c.SystemSharedMemoryRegister(ctx, &pb.SystemSharedMemoryRegisterRequest{Name: "gout", Key: gout, ByteSize: 16}); err != nil {
			t.Fatal(err)
		}
		_, err := c.SystemSharedMemoryRegister(ctx, &pb.SystemSharedMemoryRegisterRequest{Name: "bad", Key: "/a/b", ByteSize: 16})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("a key with '/': %v; want INVALID_ARGUMENT", err)
		}
		st, err := c.SystemSharedMemoryStatus(ctx, &pb.SystemSharedMemoryStatusRequest{})
		if err != nil || len(st.Regions) != 2 || st.Regions["gout"].GetKey() != gout || st.Regions["in"].GetOffset() != 4096 {
			t.Errorf("status %v, %v", st, err)
		}
		if _, err := c.SystemSharedMemoryStatus(ctx, &pb.SystemSharedMemoryStatusRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
			t.Errorf("status of no region: %v; want NOT_FOUND", err)
		}
		region := func(name string, size int64) map[string]*pb.InferParameter {
			return map[string]*pb.InferParameter{
				"shared_memory_region":    {ParameterChoice: &pb.InferParameter_StringParam{StringParam: name}},
				"shared_memory_byte_size": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: size}},
			}
		}
		resp, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "mlp",
			Inputs:  []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 16}, Parameters: region("in", 64)}},
			Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y", Parameters: region("gout", 16)}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Outputs) != 1 || resp.Outputs[0].Parameters["shared_memory_region"].GetStringParam() != "gout" ||
			len(resp.RawOutputContents) != 1 || len(resp.RawOutputContents[0]) != 0 {
			t.Errorf("answer %v", resp)
		}
		if got, _ := os.ReadFile(goutPath); !bytes.Equal(got, want) {
			t.Errorf("region gout holds %x; the inline request answered %x", got, want)
		}
		other := withKey(t, "x-api-key", shmKeyB)
		if _, err := c.SystemSharedMemoryUnregister(other, &pb.SystemSharedMemoryUnregisterRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SystemSharedMemoryUnregister(ctx, &pb.SystemSharedMemoryUnregisterRequest{}); err != nil {
			t.Fatal(err)
		}
		if st, err := c.SystemSharedMemoryStatus(ctx, &pb.SystemSharedMemoryStatusRequest{}); err != nil || len(st.Regions) != 0 {
			t.Errorf("after unregistering all: %v, %v", st, err)
		}
	})

	t.Run("cuda shared memory still refused", func(t *testing.T) {
		code, body := shmCall(t, in, "GET", "/v2/cudasharedmemory/status", shmKeyA, "")
		wantCall(t, "cuda", code, body, 400, "CUDA shared memory is not supported")
	})
}

// httpBinaryInferKey sends x to the MLP inline with the binary extension
// and returns y's bytes.
func httpBinaryInferKey(t *testing.T, in *instance, x []byte, key string) []byte {
	t.Helper()
	header := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":` +
		strconv.Itoa(len(x)) + `}}],"parameters":{"binary_data_output":true}}`)
	code, body, hdr := in.post("/v2/models/mlp/infer", append(header, x...), map[string]string{
		"Inference-Header-Content-Length": strconv.Itoa(len(header)), "X-API-Key": key})
	if code != http.StatusOK {
		t.Fatalf("HTTP binary infer: %d %s", code, body)
	}
	n, _ := strconv.Atoi(hdr.Get("Inference-Header-Content-Length"))
	if len(body[n:]) != 16 {
		t.Fatalf("y is %d bytes", len(body[n:]))
	}
	return body[n:]
}

// prepHolds reports whether a prep worker of in holds a descriptor of
// the object at path.
func prepHolds(t *testing.T, in *instance, path string) bool {
	t.Helper()
	for _, w := range in.status().Workers {
		if w.Role != "prep" {
			continue
		}
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", w.PID))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && l == path {
				return true
			}
		}
	}
	return false
}

// workerPIDs are in's workers' pids, sorted.
func workerPIDs(t *testing.T, in *instance) []int {
	t.Helper()
	var pids []int
	for _, w := range in.status().Workers {
		pids = append(pids, w.PID)
	}
	slices.Sort(pids)
	return pids
}
