package v2

import "github.com/supervisor-dev/supervisor/internal/tensor"

// KeyWriter takes the fields of a request's key, each written with its
// length or at a fixed width so that different sequences of fields never
// write the same bytes: the response cache's respcache.KeyBuilder and the
// poison quarantine's poison.Hasher.
type KeyWriter interface {
	Int(n int64)
	String(s string)
	Bytes(p []byte)
}

// WriteInputsKey writes what the model receives of inputs: their count,
// and each one's name, datatype, shape and bytes. A JSON request and a
// binary one with the same tensors write the same fields. The response
// cache's keys depend on this sequence: changing it changes every key.
func WriteInputsKey(w KeyWriter, inputs []tensor.Tensor) {
	w.Int(int64(len(inputs)))
	for i := range inputs {
		in := &inputs[i]
		w.String(in.Name)
		w.Int(int64(in.DType))
		w.Int(int64(len(in.Shape)))
		for _, d := range in.Shape {
			w.Int(d)
		}
		w.Bytes(in.Data)
	}
}

// WriteOutputsKey writes the requested outputs: their count, and each
// one's name and classification (not Binary, which changes only the
// answer's encoding).
func WriteOutputsKey(w KeyWriter, outputs []RequestedOutput) {
	w.Int(int64(len(outputs)))
	for _, o := range outputs {
		w.String(o.Name)
		w.Int(int64(o.Classification))
	}
}
