package prep

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
)

// prefixModels are a tensor model like the MLP and an image model like
// the SqueezeNet configs (max_images 4).
func prefixModels(t testing.TB) (mlp, img *model) {
	t.Helper()
	mlpMD := tensor.Metadata{Name: "mlp", Inputs: []tensor.Spec{{Name: "x", DType: tensor.FP32, Shape: []int64{-1, 16}}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, 4}}}}
	mlp = &model{md: mlpMD, api: mlpMD}
	md := *imageModel(tensor.FP32, 1, 3, 16, 16)
	img = &model{md: md, api: md}
	if err := img.process(worker.Processing{Model: "m", Image: &worker.ImageInput{MaxImages: 4, MaxPixels: 40_000_000}}, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	return mlp, img
}

// checkPrefixOf asks the prefix check about body[:n] of a body of
// len(body) bytes and returns its status and body.
func checkPrefixOf(m *model, contentType, headerLen string, body []byte, n int) (int, string) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetContentType(contentType)
	if headerLen != "" {
		ctx.Request.Header.Set(headerLenHeader, headerLen)
	}
	ctx.Request.Header.Set(worker.PrefixHeader, strconv.Itoa(len(body)))
	ctx.Request.SetBody(body[:min(n, len(body))])
	(&handler{}).precheck(&ctx, m)
	return ctx.Response.StatusCode(), string(ctx.Response.Body())
}

func photo(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "testdata", "images", name))
	if err != nil {
		t.Skipf("shared test data: %v", err)
	}
	return b
}

// binaryImages is a V2 request with the binary extension carrying imgs.
func binaryImages(imgs ...[]byte) ([]byte, string) {
	var data []byte
	for _, b := range imgs {
		data = binary.LittleEndian.AppendUint32(data, uint32(len(b)))
		data = append(data, b...)
	}
	header := fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"BYTES","shape":[%d,1],"parameters":{"binary_data_size":%d}}]}`, len(imgs), len(data))
	return append([]byte(header), data...), strconv.Itoa(len(header))
}

// jsonImages is a V2 JSON request carrying imgs base64-encoded.
func jsonImages(imgs ...[]byte) []byte {
	parts := make([]string, len(imgs))
	for i, b := range imgs {
		parts[i] = `"` + base64.StdEncoding.EncodeToString(b) + `"`
	}
	return []byte(fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"BYTES","shape":[%d],"data":[%s]}]}`, len(imgs), strings.Join(parts, ",")))
}

// TestPrecheckRefusesFromThePrefix: each hostile body, and requests wrong
// from their first bytes, are refused from 64 KiB with the whole
// request's status and a message naming what is wrong.
func TestPrecheckRefusesFromThePrefix(t *testing.T) {
	mlp, img := prefixModels(t)
	floodBin, floodHL := hostile.BytesFloodBinary("x", 1<<20)
	badPair, badPairHL := binaryImages(encodePNG(t, 8, 8), hostile.ScanBombJPEG(8000))
	mlpInt := `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,16],"data":[` + strings.Repeat("1,", 15) + `1]}],"id":"` + strings.Repeat("a", 1<<20) + `"}`
	cases := []struct {
		name             string
		m                *model
		ctype, headerLen string
		body             []byte
		status           int
		want             string
	}{
		{"garbage JSON", mlp, "application/json", "", []byte(`{"inputs":[` + strings.Repeat("[", 1<<20)), 400, "inputs[0] must be an object"},
		{"wrong datatype", mlp, "application/json", "", []byte(mlpInt), 400, "datatype INT64 does not match the model's FP32"},
		{"image body to a tensor model", mlp, "image/jpeg", "", hostile.ScanBombJPEG(8000), 400, "takes V2 tensors, not image bodies"},
		{"scan bomb", img, "image/jpeg", "", hostile.ScanBombJPEG(8000), 400, "too costly"},
		{"16-bit PNG bomb", img, "image/png", "", hostile.PNGBomb(6000, 6000), 400, "too costly"},
		{"BYTES flood, JSON", img, "application/json", "", hostile.BytesFloodJSON("x", 1<<20), 400, "more than the 4 allowed"},
		{"BYTES flood, binary", img, "application/octet-stream", strconv.Itoa(floodHL), floodBin, 400, "more than the 4 allowed"},
		{"base64 PNG bomb in JSON", img, "application/json", "", jsonImages(hostile.PNGBomb(6000, 6000)), 400, "image 0 of 1"},
		{"scan bomb second in binary", img, "application/octet-stream", badPairHL, badPair, 400, "image 1 of 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := checkPrefixOf(c.m, c.ctype, c.headerLen, c.body, 64<<10)
			if status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("%d %s, want %d containing %q", status, body, c.status, c.want)
			}
		})
	}
}

// TestPrecheckPassesCompressedBodies: a compressed body's first bytes are
// not the request's, so they are not judged.
func TestPrecheckPassesCompressedBodies(t *testing.T) {
	mlp, _ := prefixModels(t)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Content-Encoding", "gzip")
	ctx.Request.Header.Set(worker.PrefixHeader, "1000000")
	ctx.Request.SetBody([]byte("\x1f\x8b garbage"))
	(&handler{}).precheck(&ctx, mlp)
	if ctx.Response.StatusCode() != fasthttp.StatusNoContent {
		t.Errorf("compressed body: %d %s, want 204", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// TestPrecheckPassesEveryPrefixOfValidRequests: a real photo batch, in
// JSON and binary, a raw photo and a large MLP request pass the check at
// 100 cuts each, and the first 64 KiB of each.
func TestPrecheckPassesEveryPrefixOfValidRequests(t *testing.T) {
	mlp, img := prefixModels(t)
	a, b := photo(t, "ortex_goldfish.jpg"), photo(t, "winml_fish.png")
	bin, hl := binaryImages(a, b)
	row := strings.TrimSuffix(strings.Repeat("0.5,", 16), ",")
	mlpBody := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1200,16],"data":[` + strings.TrimSuffix(strings.Repeat("["+row+"],", 1200), ",") + `]}]}`)
	cases := []struct {
		name             string
		m                *model
		ctype, headerLen string
		body             []byte
	}{
		{"JSON photos", img, "application/json", "", jsonImages(a, b)},
		{"binary photos", img, "application/octet-stream", hl, bin},
		{"raw photo", img, "image/jpeg", "", a},
		{"large MLP", mlp, "application/json", "", mlpBody},
	}
	for _, c := range cases {
		step := max(1, len(c.body)/100)
		cuts := []int{64 << 10}
		for n := 0; n < len(c.body); n += step {
			cuts = append(cuts, n)
		}
		for _, n := range cuts {
			if status, body := checkPrefixOf(c.m, c.ctype, c.headerLen, c.body, n); status != fasthttp.StatusNoContent {
				t.Fatalf("%s: the %d-byte prefix of %d: %d %s", c.name, n, len(c.body), status, body)
			}
		}
	}
}

// BenchmarkPrecheck is the prep worker's CPU for one prefix check of
// 64 KiB: a large MLP request (passes), garbage JSON and a JPEG scan bomb
// (refused).
func BenchmarkPrecheck(b *testing.B) {
	mlp, img := prefixModels(b)
	row := strings.TrimSuffix(strings.Repeat("0.5,", 16), ",")
	mlpBody := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[20000,16],"data":[` + strings.TrimSuffix(strings.Repeat("["+row+"],", 20000), ",") + `]}]}`)
	for _, c := range []struct {
		name  string
		m     *model
		ctype string
		body  []byte
	}{
		{"mlp-passes", mlp, "application/json", mlpBody},
		{"garbage-json", mlp, "application/json", []byte(`{"inputs":[` + strings.Repeat("[", 1<<20))},
		{"scan-bomb", img, "image/jpeg", hostile.ScanBombJPEG(8000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(64 << 10)
			for b.Loop() {
				checkPrefixOf(c.m, c.ctype, "", c.body, 64<<10)
			}
		})
	}
}

// TestPrecheckPanicIsNoAnswer: a panic inside the check (here a model
// whose image input is not set up) is answered 500, which the master
// takes as no answer, and does not take the worker down.
func TestPrecheckPanicIsNoAnswer(t *testing.T) {
	broken := &model{image: &imageinput.Input{MaxImages: 4}} // no spec: chunk panics
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetContentType("image/jpeg")
	ctx.Request.Header.Set(worker.PrefixHeader, "1000000")
	ctx.Request.SetBody(hostile.ScanBombJPEG(10))
	(&handler{log: zerolog.Nop()}).precheck(&ctx, broken)
	if ctx.Response.StatusCode() != fasthttp.StatusInternalServerError {
		t.Errorf("a check that panics: %d %s, want 500", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}
