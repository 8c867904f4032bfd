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

// WriteRequestKey writes the one key of an inference request: the model
// it is for (its served name: a model's versions have one each, so no
// version's key is another's; versions.go) and what that model receives of its inputs: their
// count, and each one's name, datatype, shape and bytes. A JSON request
// and a binary one with the same tensors write the same fields.
//
// It is the only key of a request's tensors: the poison quarantine keys
// a request by it alone (supervisor/front poisonkey.go), and the response
// cache's keys start their request part with it (worker/prep/modelcache),
// adding the requested outputs, which change the answer. So nothing that
// does not reach the model makes another quarantine key: not the route's
// form (/versions/{v} or none, for the same version), the requested outputs or their classification, the
// encoding, the id. The count is never negative, so a key that writes -1
// in its place (a raw body's, poison.Quarantine.KeyOf) differs from every
// one of these. The response cache's keys depend on this sequence:
// changing it changes every key.
func WriteRequestKey(w KeyWriter, model string, inputs []tensor.Tensor) {
	w.String(model)
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
// answer's encoding). The response cache's keys end with it, after
// WriteRequestKey: requests for other outputs get other answers. The
// poison quarantine leaves it out: the same tensors crash the model
// whatever outputs are asked for.
func WriteOutputsKey(w KeyWriter, outputs []RequestedOutput) {
	w.Int(int64(len(outputs)))
	for _, o := range outputs {
		w.String(o.Name)
		w.Int(int64(o.Classification))
	}
}
