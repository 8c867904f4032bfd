package onnxmodel

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// IRVersion and Opset are what Graph.Model declares: IR 8 with opset 17 of
// the default domain, both supported by every ONNX Runtime since 1.14.
const (
	IRVersion = 8
	Opset     = 17
)

// producerName is recorded in every model so a file found on disk can be
// traced back to this package.
const producerName = "supervisor/onnxmodel"

// Model is an ONNX model: one graph plus the versions it is encoded for.
type Model struct {
	Graph     *Graph
	IRVersion int64
	Opset     int64
}

// Marshal encodes the model as an onnx.proto ModelProto. The same model
// always gives the same bytes.
func (m *Model) Marshal() ([]byte, error) {
	if m.Graph == nil {
		return nil, errors.New("onnx model has no graph")
	}
	graph, err := m.Graph.marshal()
	if err != nil {
		return nil, fmt.Errorf("graph %q: %w", m.Graph.name, err)
	}
	var b []byte
	b = appendInt(b, 1, m.IRVersion) // ir_version
	b = appendString(b, 2, producerName)
	b = protowire.AppendTag(b, 7, protowire.BytesType) // graph
	b = protowire.AppendBytes(b, graph)
	var opset []byte
	opset = appendString(opset, 1, "") // domain: the default ONNX domain
	opset = appendInt(opset, 2, m.Opset)
	b = protowire.AppendTag(b, 8, protowire.BytesType) // opset_import
	return protowire.AppendBytes(b, opset), nil
}
