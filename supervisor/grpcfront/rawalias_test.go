package grpcfront

import (
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// unmarshalInferRequest decodes what proto.Unmarshal decodes, raw
// entries interleaved with other fields, of the wrong wire type, empty,
// or malformed included, and its raw_input_contents point into b.
func TestUnmarshalInferRequestAliasesRawContents(t *testing.T) {
	head, err := proto.Marshal(&pb.ModelInferRequest{ModelName: "m", Id: "a",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{3}}, {Name: "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	id := func(s string) []byte { return field(3, []byte(s)) }
	cases := []struct {
		name string
		b    []byte
		raw  int // entries that must alias b
	}{
		{"none", head, 0},
		{"after the rest", cat(head, field(7, []byte{1, 2, 3}), field(7, []byte{4})), 2},
		{"interleaved", cat(field(7, []byte{1, 2, 3}), head, id("b"), field(7, nil), id("c")), 2},
		{"empty message", nil, 0},
		{"wrong wire type", cat(head, protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 5)), 0},
	}
	for _, c := range cases {
		var want, got pb.ModelInferRequest
		if err := proto.Unmarshal(c.b, &want); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got.ModelName = "stale" // reset, as proto.Unmarshal does
		if err := unmarshalInferRequest(c.b, &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !proto.Equal(&want, &got) {
			t.Errorf("%s: decoded %v, want %v", c.name, &got, &want)
		}
		if len(got.RawInputContents) != c.raw {
			t.Fatalf("%s: %d raw entries, want %d", c.name, len(got.RawInputContents), c.raw)
		}
		lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(c.b))), uintptr(unsafe.Pointer(unsafe.SliceData(c.b)))+uintptr(len(c.b))
		for i, v := range got.RawInputContents {
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(v))); p < lo || p > hi || cap(v) != len(v) {
				t.Errorf("%s: raw entry %d is a copy (or may be appended into b), not a slice of the message", c.name, i)
			}
		}
	}
	// Malformed: refused as protobuf refuses it.
	for _, b := range [][]byte{cat(head, field(7, []byte{1})[:2]), cat(field(7, []byte{1}), []byte{0x2a, 0x05, 1})} {
		var r pb.ModelInferRequest
		if proto.Unmarshal(b, &r) == nil || unmarshalInferRequest(b, &r) == nil {
			t.Errorf("malformed %x: accepted", b)
		}
	}
}
