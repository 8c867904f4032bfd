package grpcfront

import (
	"runtime"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/decodecost"
)

// repeated is n copies of field num made by value(i), appended to a
// message's bytes by hand: the shapes a client may send that protoc's
// marshaller never writes (unpacked scalars).
func repeated(n int, num protowire.Number, typ protowire.Type, value func(b []byte, i int) []byte) []byte {
	var b []byte
	for i := range n {
		b = protowire.AppendTag(b, num, typ)
		b = value(b, i)
	}
	return b
}

// field is one length-delimited field num holding v.
func field(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

func zero(b []byte, _ int) []byte  { return protowire.AppendVarint(b, 0) }
func empty(b []byte, _ int) []byte { return protowire.AppendBytes(b, nil) }

// keyed is a map entry whose key is i's decimal digits and whose value
// is absent (decoded as an empty InferParameter).
func keyed(b []byte, i int) []byte {
	return protowire.AppendBytes(b, field(1, []byte(strconv.Itoa(i))))
}

// heldDecoding is the heap a ModelInferRequest decoded from b holds,
// as the codec decodes it: from a copy of b that its raw_input_contents
// may keep alive.
func heldDecoding(t *testing.T, b []byte) int64 {
	var r pb.ModelInferRequest
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := unmarshalInferRequest(append([]byte(nil), b...), &r); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(&r)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// decodecost.Of is at least what decoding holds, up to the capacity an
// append leaves spare (a quarter), for the messages that decode to many
// times their size: an unpacked shape was counted a byte an element (8
// decoded, 9.7x), an output's parameters their bytes (11.7x), an input's
// contents without their struct (1.4x).
func TestDecodedCostBoundsWhatDecodingHolds(t *testing.T) {
	const n = 50000
	cases := []struct {
		name string
		b    []byte
	}{
		{"unpacked shape", field(5, repeated(n, 3, protowire.VarintType, zero))},
		{"output parameters", field(6, repeated(n, 2, protowire.BytesType, keyed))},
		{"inputs of empty contents", repeated(n, 5, protowire.BytesType, func(b []byte, _ int) []byte {
			return protowire.AppendBytes(b, field(5, nil))
		})},
		{"unpacked int64 contents", field(5, field(5, repeated(n, 3, protowire.VarintType, zero)))},
		{"request parameters", repeated(n, 4, protowire.BytesType, keyed)},
		{"empty raw contents", repeated(n, 7, protowire.BytesType, empty)},
		{"raw contents", repeated(8, 7, protowire.BytesType, func(b []byte, _ int) []byte {
			return protowire.AppendBytes(b, make([]byte, n))
		})},
		{"empty outputs", repeated(n, 6, protowire.BytesType, empty)},
	}
	for _, c := range cases {
		cost, held := decodecost.Of(c.b), heldDecoding(t, c.b)
		if held > cost+cost/4 {
			t.Errorf("%s: %d bytes on the wire cost %d, but decoded they hold %d", c.name, len(c.b), cost, held)
		}
	}
}
