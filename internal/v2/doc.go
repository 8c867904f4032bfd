// Package v2 is the KServe V2 (Open Inference Protocol) JSON codec, as
// Triton speaks it over HTTP: it decodes infer requests into tensor.Tensor
// values and encodes responses, model metadata, server metadata and errors.
//
// Decoding runs in the CPU prep stage on every request, so the infer request
// decoder is a hand-written scanner that writes each number of a "data"
// array straight into the tensor's little-endian bytes: no intermediate
// []interface{}, no encoding/json and no reflection on that path. The default
// model's FP32 [1,3,224,224] input is 150,528 numbers per request.
//
// Invariants a caller can rely on:
//
//   - Every error returned by DecodeInferRequest and Validate is an *Error
//     whose Status is the HTTP status to answer with (400 for anything the
//     client sent) and whose message names the offending input or field.
//   - Every tensor in a decoded request satisfies Tensor.Check.
//   - Nothing is allocated in proportion to a declared shape before the body
//     has been checked to be long enough to hold that many values, so a
//     hostile shape such as [1000000000000] costs nothing.
//   - What a request makes the decoder allocate beyond its body is bounded
//     by counts checked as they are read (Limits, given to
//     DecodeInferRequestLimited): BYTES elements against the shapes that
//     declare them, before any "data" is read or a binary section split;
//     "inputs" and "outputs" entries as they come. Binary BYTES elements
//     are checked in place, never split into a slice per element.
//   - Tensors sent with the binary tensor data extension alias the request
//     body; tensors sent as JSON own freshly allocated bytes.
//   - DecodeInferRequestPrefix (prefix.go) runs the same rules on the
//     first bytes of a body of known (or unknown) length: what it refuses,
//     the whole body is refused for, with the same *Error; running out of
//     bytes is ErrTruncated; it allocates in proportion to the prefix.
//
// Choices where the protocol is silent:
//
//   - JSON numbers are rounded to the nearest value of the input's datatype
//     (ties to even); a magnitude beyond the type's range becomes ±Inf for
//     FP16, BF16, FP32 and FP64. Integer datatypes accept only integer
//     literals (no fraction or exponent) and reject values out of range.
//   - NaN and ±Inf are not JSON numbers. The encoder writes them as null, so
//     that every response is valid JSON; the decoder reads null in a
//     floating-point input as NaN. Clients that need exact non-finite values
//     ask for binary outputs.
//   - Nested "data" must either be flat or nest exactly as the shape does.
//   - BYTES inputs are Triton's: JSON "data" holds strings (their
//     unescaped bytes are the elements; binary payloads such as images are
//     sent base64-encoded and decoded by whoever consumes the input), and
//     binary data holds each element as a 4-byte little-endian length and
//     the bytes. A decoded BYTES tensor's Data is always the latter form.
//     BYTES outputs are written as JSON strings or, binary, the same way.
//   - parameters.classification on a requested output (Triton's
//     classification extension) is decoded into RequestedOutput; applying
//     it is the caller's business.
package v2
