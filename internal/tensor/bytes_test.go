package tensor

import (
	"bytes"
	"strings"
	"testing"
)

func TestBytesElementsRoundTrip(t *testing.T) {
	var data []byte
	want := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte{0xff}, 300)}
	for _, e := range want {
		data = AppendBytesElement(data, e)
	}
	got, err := BytesElements(data, int64(len(want)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("element %d = %q, want %q", i, got[i], want[i])
		}
	}
	tt := Tensor{Name: "s", DType: Bytes, Shape: []int64{3, 1}, Data: data}
	if err := tt.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

func TestBytesElementsErrors(t *testing.T) {
	one := AppendBytesElement(nil, []byte("abc"))
	for _, tt := range []struct {
		name string
		data []byte
		n    int64
		want string
	}{
		{"too many elements", one, 2, "cannot hold 2"},
		{"huge count", one, 1 << 40, "cannot hold"},
		{"truncated element", one[:5], 1, "length 3 but only 1 bytes left"},
		{"trailing bytes", append(one, 0), 1, "1 bytes after the last of 1 elements"},
		{"short prefix", append(one, 1, 2, 3, 4, 5), 2, "length 67305985 but only 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := BytesElements(tt.data, tt.n); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("BytesElements = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	bad := Tensor{Name: "s", DType: Bytes, Shape: []int64{2}, Data: one}
	if err := bad.Check(); err == nil {
		t.Error("Check accepted 1 element for shape [2]")
	}
}

func TestFloat64s(t *testing.T) {
	for _, tt := range []struct {
		t    Tensor
		want float64
	}{
		{Tensor{DType: FP16, Data: []byte{0x00, 0x3c}}, 1},
		{Tensor{DType: FP16, Data: []byte{0x01, 0x00}}, 5.960464477539063e-08},
		{Tensor{DType: BF16, Data: []byte{0xc0, 0x3f}}, 1.5},
		{Tensor{DType: FP32, Data: []byte{0, 0, 0x80, 0xbf}}, -1},
		{Tensor{DType: Int8, Data: []byte{0xfe}}, -2},
		{Tensor{DType: Uint16, Data: []byte{0xff, 0xff}}, 65535},
		{Tensor{DType: Int64, Data: []byte{0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, -3},
	} {
		got, err := tt.t.Float64s()
		if err != nil || len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s % x: Float64s = %v, %v, want [%v]", tt.t.DType, tt.t.Data, got, err, tt.want)
		}
	}
	if _, err := (&Tensor{Name: "s", DType: Bytes}).Float64s(); err == nil {
		t.Error("Float64s of BYTES: no error")
	}
}
