package onnxmodel_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

func TestOpTypes(t *testing.T) {
	ops, err := onnxmodel.OpTypes(marshal(t, onnxmodel.ModByZero()))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || !ops["Mod"] || !ops["Sub"] || !ops["Add"] {
		t.Errorf("OpTypes(ModByZero) = %v, want Mod, Sub and Add", ops)
	}
	ops, err = onnxmodel.OpTypes(marshal(t, onnxmodel.MLP(1)))
	if err != nil {
		t.Fatal(err)
	}
	if ops["Mod"] || ops["Div"] || len(ops) == 0 {
		t.Errorf("OpTypes(MLP) = %v, want its ops and no Mod or Div", ops)
	}
}

// TestOpTypesSubgraph finds an operator inside an If branch (a graph
// attribute), encoded by hand: ModelProto.graph(7) > GraphProto.node(1) >
// NodeProto.attribute(5) > AttributeProto.g(6) > node > op_type(4).
func TestOpTypesSubgraph(t *testing.T) {
	msg := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	div := msg(1, msg(4, []byte("Div")))                           // GraphProto{node{op_type: Div}}
	ifNode := append(msg(4, []byte("If")), msg(5, msg(6, div))...) // NodeProto{op_type: If, attribute{g}}
	model := msg(7, msg(1, ifNode))
	ops, err := onnxmodel.OpTypes(model)
	if err != nil {
		t.Fatal(err)
	}
	if !ops["If"] || !ops["Div"] {
		t.Errorf("OpTypes = %v, want If and the Div of its branch", ops)
	}
}

func TestOpTypesRejectsGarbage(t *testing.T) {
	if _, err := onnxmodel.OpTypes([]byte{0x3a, 0xff}); err == nil {
		t.Error("OpTypes accepted a truncated model")
	}
}

func TestDivisorInputs(t *testing.T) {
	for _, c := range []struct {
		name  string
		model *onnxmodel.Model
		want  []string
	}{
		{"mod by input", onnxmodel.ModByInput(), []string{"d"}},
		{"mod by computed zero", onnxmodel.ModByZero(), nil},
		{"mlp", onnxmodel.MLP(1), nil},
	} {
		got, err := onnxmodel.DivisorInputs(marshal(t, c.model))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: DivisorInputs = %v, want %v", c.name, got, c.want)
		}
	}
}
