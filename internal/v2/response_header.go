package v2

// ResponseHeader is the JSON header of a binary-extension infer response
// (what AppendInferResponse writes), as the gRPC front reads it to turn
// the answer into a ModelInferResponse. Strings are copies; Parameter
// values are slices of the header.
type ResponseHeader struct {
	ModelName, ModelVersion, ID string
	Parameters                  []Parameter
	Outputs                     []ResponseOutput
}

// ResponseOutput is one entry of a response's "outputs".
type ResponseOutput struct {
	Name, Datatype string
	Shape          []int64
	// BinarySize is its binary_data_size parameter: how many bytes of the
	// binary data after the header are its; -1 when it has none.
	BinarySize int64
	// Parameters are its other parameters.
	Parameters []Parameter
}

// Parameter is one member of a "parameters" object: its key and its
// value as raw JSON.
type Parameter struct {
	Key   string
	Value []byte
}

// DecodeResponseHeader reads a V2 infer response's JSON header b. It is
// hand-written, like the request's decoder, because the gRPC front reads
// one on every RPC: encoding/json's reflection and maps were most of
// what turning the answer back into protobuf cost. Fields it does not
// know (an output's "data") are checked and passed over; null stands for
// an absent value.
func DecodeResponseHeader(b []byte) (*ResponseHeader, error) {
	s := &scanner{b: b}
	h := &ResponseHeader{}
	s.ws()
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "model_name":
			return s.optString(&h.ModelName, "model_name")
		case "model_version":
			return s.optString(&h.ModelVersion, "model_version")
		case "id":
			return s.optString(&h.ID, "id")
		case "parameters":
			var err error
			h.Parameters, err = s.parameters(nil, nil)
			return err
		case "outputs":
			if s.null() {
				return nil
			}
			if s.peek() != '[' {
				return badRequest(`"outputs" must be an array, got %s`, s.kind())
			}
			return s.array(func(int) error {
				o, err := s.responseOutput()
				h.Outputs = append(h.Outputs, o)
				return err
			})
		}
		return s.skip(1)
	})
	if err != nil {
		return nil, err
	}
	if s.ws(); s.i != len(s.b) {
		return nil, s.syntax("the end of the header")
	}
	return h, nil
}

// responseOutput reads one entry of "outputs".
func (s *scanner) responseOutput() (ResponseOutput, error) {
	o := ResponseOutput{BinarySize: -1}
	if s.peek() != '{' {
		return o, badRequest(`an entry of "outputs" must be an object, got %s`, s.kind())
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "name":
			return s.optString(&o.Name, "an output's name")
		case "datatype":
			return s.optString(&o.Datatype, "an output's datatype")
		case "shape":
			if s.null() {
				return nil
			}
			if s.peek() != '[' {
				return badRequest(`output %q: "shape" must be an array, got %s`, o.Name, s.kind())
			}
			o.Shape = make([]int64, 0, 4)
			return s.array(func(int) error {
				d, err := s.intIn("a dimension of an output's shape", 1<<63-1)
				o.Shape = append(o.Shape, d)
				return err
			})
		case "parameters":
			var err error
			o.Parameters, err = s.parameters(&o.BinarySize, []byte("binary_data_size"))
			return err
		}
		return s.skip(1)
	})
	return o, err
}

// parameters reads a "parameters" object (or null) into its members;
// the member called size, when size is set, is read as an integer into
// *size instead.
func (s *scanner) parameters(size *int64, sizeKey []byte) ([]Parameter, error) {
	if s.null() {
		return nil, nil
	}
	if s.peek() != '{' {
		return nil, badRequest(`"parameters" must be an object, got %s`, s.kind())
	}
	var ps []Parameter
	err := s.object(func(key []byte) error {
		if size != nil && string(key) == string(sizeKey) {
			n, err := s.intIn("binary_data_size", 1<<63-1)
			*size = n
			return err
		}
		start := s.i
		if err := s.skip(1); err != nil {
			return err
		}
		ps = append(ps, Parameter{Key: string(key), Value: s.b[start:s.i]})
		return nil
	})
	return ps, err
}

// optString reads a string, or null (leaving *dst as it is).
func (s *scanner) optString(dst *string, what string) error {
	if s.null() {
		return nil
	}
	if s.peek() != '"' {
		return badRequest("%s must be a string, got %s", what, s.kind())
	}
	v, err := s.str()
	*dst = string(v)
	return err
}

// null consumes a null, reporting whether there was one.
func (s *scanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}
