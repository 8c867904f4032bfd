package conformance

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// HeaderLength is Triton's binary tensor extension header.
const HeaderLength = "Inference-Header-Content-Length"

// BinaryRequest builds a V2 infer request body carrying every input as
// binary data and asking for every output as binary data; it returns the
// body and the JSON header's length.
func BinaryRequest(inputs []tensor.Tensor) ([]byte, int, error) {
	type param struct {
		BinaryDataSize int `json:"binary_data_size"`
	}
	type input struct {
		Name       string  `json:"name"`
		DType      string  `json:"datatype"`
		Shape      []int64 `json:"shape"`
		Parameters param   `json:"parameters"`
	}
	req := struct {
		Inputs     []input         `json:"inputs"`
		Parameters map[string]bool `json:"parameters"`
	}{Inputs: []input{}, Parameters: map[string]bool{"binary_data_output": true}} // [] not null for a model without inputs
	for _, t := range inputs {
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		req.Inputs = append(req.Inputs, input{t.Name, t.DType.String(), shape, param{len(t.Data)}})
	}
	header, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	body := header
	for _, t := range inputs {
		body = append(body, t.Data...)
	}
	return body, len(header), nil
}

// ParseBinaryResponse decodes a V2 infer response whose outputs are all
// binary data (headerLen from the response's HeaderLength header).
func ParseBinaryResponse(body []byte, headerLen string) ([]tensor.Tensor, error) {
	n, err := strconv.Atoi(headerLen)
	if err != nil || n < 0 || n > len(body) {
		return nil, fmt.Errorf("response has no valid %s (%q)", HeaderLength, headerLen)
	}
	var resp struct {
		Outputs []struct {
			Name       string  `json:"name"`
			DType      string  `json:"datatype"`
			Shape      []int64 `json:"shape"`
			Parameters struct {
				BinaryDataSize *int `json:"binary_data_size"`
			} `json:"parameters"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body[:n], &resp); err != nil {
		return nil, fmt.Errorf("decode response header: %w", err)
	}
	rest := body[n:]
	outs := make([]tensor.Tensor, 0, len(resp.Outputs))
	for _, o := range resp.Outputs {
		dt, ok := tensor.ParseDType(o.DType)
		size := o.Parameters.BinaryDataSize
		if !ok || size == nil || *size > len(rest) {
			return nil, fmt.Errorf("output %q: datatype %q or binary size missing or past the body", o.Name, o.DType)
		}
		outs = append(outs, tensor.Tensor{Name: o.Name, DType: dt, Shape: o.Shape, Data: rest[:*size]})
		rest = rest[*size:]
	}
	return outs, nil
}
