package v2

import (
	"math"
	"strconv"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// RequestedOutput is one entry of the request's "outputs" list.
type RequestedOutput struct {
	Name string
	// Binary asks for the output as binary tensor data: the output's
	// parameters.binary_data when given, else the request's
	// binary_data_output.
	Binary bool
	// Classification is parameters.classification, Triton's
	// classification extension: return the top Classification classes of
	// each batch item as BYTES "score:index[:label]" instead of the
	// tensor. 0 means the tensor itself.
	Classification int
}

// InferRequest is a decoded V2 infer request.
type InferRequest struct {
	ID      string          // echoed in the response; "" when the client sent none
	Inputs  []tensor.Tensor // in request order, each satisfying Tensor.Check
	Outputs []RequestedOutput
	// BinaryOutputs is parameters.binary_data_output: return every output
	// not listed in Outputs as binary tensor data.
	BinaryOutputs bool
	// Timeout is parameters.timeout, which Triton gives in microseconds;
	// 0 means none.
	Timeout time.Duration
	// Priority is parameters.priority; 0 means the model's default.
	Priority int
}

// noHeaderLength is the headerLen that says the request has no
// Inference-Header-Content-Length header: the whole body is JSON.
const noHeaderLength = -1

// DecodeInferRequest parses a V2 infer request. headerLen is the value of
// the Inference-Header-Content-Length header (binary tensor data extension)
// or -1 when absent: then body[:headerLen] is the JSON header and the rest
// holds the binary tensor data, consumed in input order by the inputs that
// carry parameters.binary_data_size.
//
// Errors are *Error with Status 400 and a message a client can act on.
// Inputs sent as binary data alias body, so body must stay unchanged while
// the request is in use; inputs sent as JSON own their bytes.
func DecodeInferRequest(body []byte, headerLen int) (*InferRequest, error) {
	return DecodeInferRequestLimited(body, headerLen, Limits{})
}

// DecodeInferRequestLimited is DecodeInferRequest with lim bounding the
// counts of BYTES elements, inputs and outputs, each refused (400) as
// soon as it is passed, before anything is allocated for it.
func DecodeInferRequestLimited(body []byte, headerLen int, lim Limits) (*InferRequest, error) {
	header := body
	if headerLen != noHeaderLength {
		if headerLen < 0 || headerLen > len(body) {
			return nil, badRequest("Inference-Header-Content-Length %d is outside the %d-byte body", headerLen, len(body))
		}
		header = body[:headerLen]
	}
	d := decoder{s: scanner{b: header}, req: &InferRequest{}, lim: lim}
	if err := d.request(); err != nil {
		return nil, err
	}
	if err := d.binary(body, headerLen, int64(len(body))); err != nil {
		return nil, err
	}
	return d.result(len(d.inputs)), nil
}

// result is the request with its first n inputs.
func (d *decoder) result(n int) *InferRequest {
	d.req.Inputs = make([]tensor.Tensor, n)
	for i := range n {
		d.req.Inputs[i] = d.inputs[i].t
	}
	return d.req
}

// decoder holds the state of one DecodeInferRequest call.
type decoder struct {
	s      scanner
	req    *InferRequest
	inputs []input
	// explicit marks the outputs whose parameters.binary_data was given;
	// the others take binary_data_output once the whole header is read.
	explicit   []bool
	lim        Limits
	bytesElems int64 // BYTES elements the inputs read so far declare
	// Prefix mode (prefix.go): done counts the inputs read whole; open
	// is the BYTES input the prefix ended in, cut whether it did.
	done    int
	open    *OpenInput
	cut     bool
	unsized bool // the body's length is not known: no bytes are left over
}

// request reads the top-level object, then settles what depends on fields
// that may come in any order.
func (d *decoder) request() error {
	s := &d.s
	s.ws()
	if c := s.peek(); c != '{' && c != 0 {
		return badRequest("the request must be a JSON object, got %s", s.kind())
	}
	seen := map[string]bool{}
	err := s.object(func(key []byte) error {
		switch k := string(key); k {
		case "id", "parameters", "inputs", "outputs":
			if seen[k] {
				return badRequest("the request has more than one %q field", k)
			}
			seen[k] = true
		}
		switch string(key) {
		case "id":
			return d.id()
		case "parameters":
			return d.parameters()
		case "inputs":
			return d.inputList()
		case "outputs":
			return d.outputList()
		}
		return s.skip(1)
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.syntax("the end of the JSON header")
	}
	if !seen["inputs"] {
		return badRequest(`the request has no "inputs" field`)
	}
	for i, set := range d.explicit {
		if !set {
			d.req.Outputs[i].Binary = d.req.BinaryOutputs
		}
	}
	return nil
}

func (d *decoder) id() error {
	if d.s.peek() != '"' {
		return badRequest(`"id" must be a string, got %s`, d.s.kind())
	}
	v, err := d.s.str()
	d.req.ID = string(v)
	return err
}

// parameters reads the request-level parameters; unknown ones are ignored,
// as V2 allows extensions, but Triton's sequence parameters are refused
// (sequenceParams).
func (d *decoder) parameters() error {
	s := &d.s
	if s.peek() != '{' {
		return badRequest(`"parameters" must be an object, got %s`, s.kind())
	}
	return s.object(func(key []byte) error {
		switch k := string(key); k {
		case "sequence_id", "sequence_start", "sequence_end":
			return badRequest(sequenceRefusal, k)
		case "binary_data_output":
			return d.boolParam(`parameters.binary_data_output`, &d.req.BinaryOutputs)
		case "timeout":
			us, err := d.uintParam("parameters.timeout (microseconds)", math.MaxInt64/int64(time.Microsecond))
			d.req.Timeout = time.Duration(us) * time.Microsecond
			return err
		case "priority":
			p, err := d.uintParam("parameters.priority", math.MaxInt32)
			d.req.Priority = int(p)
			return err
		}
		return s.skip(2)
	})
}

// sequenceRefusal answers a request that carries one of Triton's sequence
// parameters (sequence_id, sequence_start, sequence_end: the sequence
// extension, which GET /v2 does not list). There is no sequence batcher:
// every request runs alone, on any infer worker, with no state kept
// between them, so a stateful client would silently get answers computed
// without its sequence's state. Refusing says so at the first request.
const sequenceRefusal = "parameters.%s: this server has no sequence batcher (Triton's sequence extension): " +
	"every request is run alone, on any infer worker, with no state kept between requests; " +
	"send the request without sequence_id, sequence_start and sequence_end"

func (d *decoder) boolParam(what string, dst *bool) error {
	if c := d.s.peek(); c != 't' && c != 'f' {
		return badRequest("%s must be true or false, got %s", what, d.s.kind())
	}
	v, err := d.s.bool()
	*dst = v
	return err
}

// uintParam reads an integer in [0, hi].
func (d *decoder) uintParam(what string, hi int64) (int64, error) {
	return d.s.intIn(what, hi)
}

// outputList reads "outputs": [{"name": ..., "parameters": {...}}, ...].
func (d *decoder) outputList() error {
	s := &d.s
	if s.peek() != '[' {
		return badRequest(`"outputs" must be an array, got %s`, s.kind())
	}
	names := map[string]bool{}
	return s.array(func(i int) error {
		if i == d.lim.maxOutputs() {
			return badRequest(`"outputs" has more than %d entries, the model's outputs; name each output once`, i)
		}
		if s.peek() != '{' {
			return badRequest(`outputs[%d] must be an object, got %s`, i, s.kind())
		}
		var o RequestedOutput
		hasName, explicit := false, false
		err := s.object(func(key []byte) error {
			switch string(key) {
			case "name":
				if s.peek() != '"' {
					return badRequest(`outputs[%d]: "name" must be a string, got %s`, i, s.kind())
				}
				v, err := s.str()
				o.Name, hasName = string(v), true
				return err
			case "parameters":
				return d.outputParameters(i, &o, &explicit)
			}
			return s.skip(3)
		})
		switch {
		case err != nil:
			return err
		case !hasName:
			return badRequest(`outputs[%d] has no "name"`, i)
		case names[o.Name]:
			return badRequest("output %q is requested more than once", o.Name)
		}
		names[o.Name] = true
		d.req.Outputs = append(d.req.Outputs, o)
		d.explicit = append(d.explicit, explicit)
		return nil
	})
}

// maxClassification bounds parameters.classification: more classes than
// any classifier has.
const maxClassification = 1 << 20

func (d *decoder) outputParameters(i int, o *RequestedOutput, explicit *bool) error {
	s := &d.s
	if s.peek() != '{' {
		return badRequest(`outputs[%d]: "parameters" must be an object, got %s`, i, s.kind())
	}
	return s.object(func(key []byte) error {
		switch string(key) {
		case "binary_data":
			*explicit = true
			return d.boolParam("outputs["+strconv.Itoa(i)+"].parameters.binary_data", &o.Binary)
		case "classification":
			k, err := d.uintParam("outputs["+strconv.Itoa(i)+"].parameters.classification", maxClassification)
			o.Classification = int(k)
			return err
		case "shared_memory_region":
			return badRequest("outputs[%d]: %s", i, RegionNotRead)
		}
		return s.skip(4)
	})
}

// binary hands out the binary section after the JSON header to the inputs
// that declared parameters.binary_data_size, in input order. size is the
// whole body's length: len(body), or more when body is a prefix (then an
// input whose data the prefix cuts gets what is present, and d.cut is set).
func (d *decoder) binary(body []byte, headerLen int, size int64) error {
	var rest []byte
	var left int64 // binary bytes of the whole body not handed out yet
	if headerLen != noHeaderLength {
		rest, left = body[headerLen:], size-int64(headerLen)
	}
	for i := range d.inputs {
		in := &d.inputs[i]
		if in.binSize < 0 {
			continue
		}
		if headerLen == noHeaderLength {
			return badRequest("%s has parameters.binary_data_size but the request has no Inference-Header-Content-Length header", in.label())
		}
		if in.binSize > left {
			return badRequest("%s: binary_data_size is %d but only %d bytes of binary data remain", in.label(), in.binSize, left)
		}
		n := min(in.binSize, int64(len(rest)))
		in.t.Data = rest[:n:n]
		rest, left = rest[n:], left-in.binSize
		if n < in.binSize {
			if err := d.cutBinary(in); err != nil {
				return err
			}
			continue
		}
		if in.t.DType == tensor.Bytes {
			if err := tensor.CheckBytesElements(in.t.Data, in.n); err != nil {
				return badRequest("%s: binary BYTES data for shape %s: %v (each element is a 4-byte little-endian length, then the bytes)",
					in.label(), tensor.FormatShape(in.t.Shape), err)
			}
		}
	}
	if left != 0 && !d.unsized {
		return badRequest("%d bytes of binary data after the JSON header belong to no input; check binary_data_size and Inference-Header-Content-Length", left)
	}
	return nil
}
