package v2

import (
	"encoding/binary"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// allocated is what f allocates on the heap, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !strings.Contains(e.Msg, want) {
		t.Fatalf("err = %v, want a 400 containing %q", err, want)
	}
}

// TestBytesFloodRefusedBeforeExpansion: 2 million empty BYTES elements (a
// 6 MB body) would cost 56 MB split; refused from the declared shape,
// with the shape before or after the data, for a few KB.
func TestBytesFloodRefusedBeforeExpansion(t *testing.T) {
	flood := hostile.BytesFloodJSON("x", 2_000_000)
	// The same request with "data" before "shape": read once the shape is known.
	i, j := strings.Index(string(flood), `"shape"`), strings.Index(string(flood), `,"data"`)
	dataFirst := string(flood[:i]) + string(flood[j+1:len(flood)-3]) + "," + string(flood[i:j]) + "}]}"
	for name, body := range map[string][]byte{"shape first": flood, "data first": []byte(dataFirst)} {
		var err error
		n := allocated(func() { _, err = DecodeInferRequestLimited(body, -1, Limits{MaxBytesElements: 64}) })
		wantRefused(t, err, `input "x": BYTES shape [2000000] makes 2000000 elements in the request, more than the 64 allowed`)
		if n > 64<<10 {
			t.Errorf("%s: refusing the flood allocated %d bytes", name, n)
		}
	}
	// Within the limit the same elements decode.
	r, err := DecodeInferRequestLimited(hostile.BytesFloodJSON("x", 64), -1, Limits{MaxBytesElements: 64})
	if err != nil || len(r.Inputs[0].Data) != 64*4 {
		t.Fatalf("64 elements: %v", err)
	}
}

// TestBinaryBytesCountedBeforeSplitting: the binary extension's elements
// are counted against the limit, and checked without a slice per element.
func TestBinaryBytesCountedBeforeSplitting(t *testing.T) {
	const n = 1 << 20
	header := `{"inputs":[{"name":"x","datatype":"BYTES","shape":[` + strconv.Itoa(n) + `],"parameters":{"binary_data_size":` + strconv.Itoa(4*n) + `}}]}`
	body := append([]byte(header), make([]byte, 4*n)...) // n empty elements
	_, err := DecodeInferRequestLimited(body, len(header), Limits{MaxBytesElements: 8})
	wantRefused(t, err, "more than the 8 allowed")
	var r *InferRequest
	a := allocated(func() { r, err = DecodeInferRequestLimited(body, len(header), Limits{MaxBytesElements: n}) })
	if err != nil || len(r.Inputs[0].Data) != 4*n {
		t.Fatalf("decode: %v", err)
	}
	if a > 64<<10 {
		t.Errorf("checking %d binary elements allocated %d bytes", n, a)
	}
	binary.LittleEndian.PutUint32(body[len(header):], 1) // the first element claims a byte too many
	_, err = DecodeInferRequestLimited(body, len(header), Limits{MaxBytesElements: n})
	wantRefused(t, err, "binary BYTES data for shape [1048576]")
}

func TestInputsAndOutputsCounted(t *testing.T) {
	in := `{"name":"x%d","datatype":"FP32","shape":[1],"data":[1]}`
	var ins, outs []string
	for i := range 5 {
		ins = append(ins, strings.Replace(in, "%d", strconv.Itoa(i), 1))
		outs = append(outs, `{"name":"y`+strconv.Itoa(i)+`"}`)
	}
	_, err := DecodeInferRequestLimited([]byte(`{"inputs":[`+strings.Join(ins, ",")+`]}`), -1, Limits{MaxInputs: 2})
	wantRefused(t, err, `"inputs" has more than 2 entries`)
	_, err = DecodeInferRequestLimited([]byte(`{"inputs":[`+ins[0]+`],"outputs":[`+strings.Join(outs, ",")+`]}`), -1, Limits{MaxOutputs: 3})
	wantRefused(t, err, `"outputs" has more than 3 entries`)
	if _, err := DecodeInferRequestLimited([]byte(`{"inputs":[`+strings.Join(ins[:2], ",")+`],"outputs":[`+strings.Join(outs[:3], ",")+`]}`), -1, Limits{MaxInputs: 2, MaxOutputs: 3}); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}

// TestBytesElementsFromBodyBudget: without MaxBytesElements, the bound is
// what max_body_bytes pays for at BytesElementCost each. A text model's
// batch of 200,000 short strings (more than the old fixed 65,536) in a
// 2 MB body decodes under a 64 MiB max_body_bytes; past the derived
// bound a request is refused 413, naming max_body_bytes, from its shape
// and for a few KB, whatever its body holds.
func TestBytesElementsFromBodyBudget(t *testing.T) {
	const maxBody = 64 << 20
	lim := Limits{MaxBodyBytes: maxBody}
	const many = 200_000
	r, err := DecodeInferRequestLimited(hostile.BytesFloodJSON("x", many), -1, lim)
	if err != nil || len(r.Inputs[0].Data) != 4*many {
		t.Fatalf("%d elements under max_body_bytes %d: %v", many, maxBody, err)
	}
	bound := maxBody / BytesElementCost
	flood := hostile.BytesFloodJSON("x", bound+1)
	var e *Error
	a := allocated(func() { _, err = DecodeInferRequestLimited(flood, -1, lim) })
	if !errors.As(err, &e) || e.Status != http.StatusRequestEntityTooLarge || !strings.Contains(e.Msg, "max_body_bytes allows") ||
		!strings.Contains(e.Msg, strconv.Itoa(bound)) {
		t.Fatalf("%d elements: %v, want a 413 naming max_body_bytes and the bound %d", bound+1, err, bound)
	}
	if a > 64<<10 {
		t.Errorf("refusing %d elements allocated %d bytes", bound+1, a)
	}
	// Neither bound given: the fixed default for callers that know nothing.
	_, err = DecodeInferRequestLimited(hostile.BytesFloodJSON("x", DefaultMaxBytesElements+1), -1, Limits{})
	wantRefused(t, err, "more than the 65536 allowed")
}
