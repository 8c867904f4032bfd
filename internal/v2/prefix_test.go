package v2

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

const prefixSize = 64 << 10

// TestPrefixRefusesHostilePayloads: each attack body of the hostile suite
// that is wrong from its first bytes is refused from a 64 KiB prefix, with
// the message the whole body gets.
func TestPrefixRefusesHostilePayloads(t *testing.T) {
	lim := Limits{MaxBytesElements: 64}
	floodBin, floodHL := hostile.BytesFloodBinary("data_0", 1<<20)
	cases := []struct {
		name      string
		body      []byte
		headerLen int
		want      string
	}{
		{"garbage JSON", []byte(`{"inputs":[` + strings.Repeat("[", 1<<20)), -1, "inputs[0] must be an object, got an array"},
		{"not JSON", bytes.Repeat([]byte{0xff}, 1<<20), -1, "must be a JSON object"},
		{"BYTES flood, JSON", hostile.BytesFloodJSON("data_0", 1<<20), -1, "more than the 64 allowed"},
		{"BYTES flood, binary", floodBin, floodHL, "more than the 64 allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeInferRequestPrefix(c.body[:prefixSize], int64(len(c.body)), c.headerLen, lim)
			if errors.Is(err, ErrTruncated) {
				t.Fatalf("the 64 KiB prefix passed: %v", err)
			}
			wantError(t, err, c.want)
			_, whole := DecodeInferRequestLimited(c.body, c.headerLen, lim)
			if whole == nil || whole.Error() != err.Error() {
				t.Errorf("the whole body gets %v, the prefix %v", whole, err)
			}
		})
	}
}

// TestPrefixBinaryChecks: with the binary extension the header is judged
// whole, and binary_data_size against the declared body length.
func TestPrefixBinaryChecks(t *testing.T) {
	header := `{"inputs":[{"name":"a","shape":[4],"datatype":"FP32","parameters":{"binary_data_size":16}}]}`
	body := append([]byte(header), make([]byte, 16)...)
	cases := []struct {
		size int64
		want string // "" = truncated
	}{
		{int64(len(body)), ""},
		{int64(len(body)) + 8, "8 bytes of binary data after the JSON header belong to no input"},
		{int64(len(body)) - 4, "only 12 bytes of binary data remain"},
	}
	for _, c := range cases {
		_, err := DecodeInferRequestPrefix(body[:len(header)+4], c.size, len(header), Limits{})
		if c.want == "" {
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("size %d: err = %v, want truncated", c.size, err)
			}
			continue
		}
		wantError(t, err, c.want)
	}
	if _, err := DecodeInferRequestPrefix(body[:len(header)+4], -1, len(header), Limits{}); !errors.Is(err, ErrTruncated) {
		t.Errorf("unknown size: err = %v, want truncated", err)
	}
	padded := header + "          "
	body = append([]byte(padded), make([]byte, 16)...)
	everyPrefixPasses(t, body, len(padded), Limits{})
	_, err := DecodeInferRequestPrefix([]byte(header[:10]), 100, 200, Limits{})
	wantError(t, err, "Inference-Header-Content-Length 200 is outside the 100-byte body")
}

// TestPrefixOpenBytesInput: the BYTES input a prefix ends in is handed
// out as far as it goes (whole elements, then the cut one's start), from
// JSON strings and from binary data; a binary element longer than its
// input's data is refused.
func TestPrefixOpenBytesInput(t *testing.T) {
	body := request(`"name":"img","shape":[3],"datatype":"BYTES","data":["aGVsbG8=","d29y\/bGQ=","eHl6"]`)
	cut := strings.Index(body, "d29y") + 3
	_, err := DecodeInferRequestPrefix([]byte(body[:cut]), int64(len(body)), -1, Limits{})
	var tr *Truncated
	if !errors.As(err, &tr) || tr.Open == nil {
		t.Fatalf("err = %v, want *Truncated with an open input", err)
	}
	if o := tr.Open; o.Name != "img" || len(o.Elements) != 1 || string(o.Elements[0]) != "aGVsbG8=" || string(o.Tail) != "d29" {
		t.Errorf("open input %q: elements %q, tail %q", o.Name, o.Elements, o.Tail)
	}

	header := `{"inputs":[{"name":"img","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":15}}]}`
	bin := binary.LittleEndian.AppendUint32(nil, 3)
	bin = append(bin, "abc"...)
	bin = binary.LittleEndian.AppendUint32(bin, 4)
	bin = append(bin, "defg"...)
	full := append([]byte(header), bin...)
	_, err = DecodeInferRequestPrefix(full[:len(full)-2], int64(len(full)), len(header), Limits{})
	if !errors.As(err, &tr) || tr.Open == nil || len(tr.Open.Elements) != 1 || string(tr.Open.Tail) != "de" {
		t.Fatalf("binary: err = %v, open %+v", err, tr)
	}
	everyPrefixPasses(t, full, len(header), Limits{})

	bad := append([]byte(header), binary.LittleEndian.AppendUint32(nil, 100)...)
	_, err = DecodeInferRequestPrefix(bad, int64(len(full)), len(header), Limits{})
	wantError(t, err, "element 0: length 100 but only 11 bytes left")
}

// TestPrefixAllocatesByPrefix: a prefix decode of a shape that claims a
// large body allocates for what the prefix can hold, not for the shape.
func TestPrefixAllocatesByPrefix(t *testing.T) {
	head := `{"inputs":[{"name":"x","shape":[16000000],"datatype":"FP64","data":[1,2,3`
	allocs := testing.AllocsPerRun(5, func() {
		_, err := DecodeInferRequestPrefix([]byte(head), 64<<20, -1, Limits{})
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("err = %v, want truncated", err)
		}
	})
	var ms1, ms2 runtimeMem
	ms1.read()
	for range 10 {
		_, _ = DecodeInferRequestPrefix([]byte(head), 64<<20, -1, Limits{})
	}
	ms2.read()
	if grew := ms2.total - ms1.total; grew > 10<<20 {
		t.Errorf("10 prefix decodes of a 128 MB shape allocated %d bytes (%v allocs each)", grew, allocs)
	}
}

// runtimeMem reads the bytes the Go heap has handed out in all.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
