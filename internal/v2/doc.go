// Package v2 is the KServe V2 (Open Inference Protocol) codec, as Triton
// speaks it over HTTP: it decodes infer requests, JSON or with the binary
// tensor extension, into tensor.Tensor values, and encodes responses,
// model and server metadata, and errors. The decoder is a hand-written
// scanner (scanner.go), since it runs on every request in the prep stage.
//
// Invariants:
//
//   - Every error of DecodeInferRequest and Validate is an *Error whose
//     Status is the HTTP status to answer (400 for anything the client
//     sent) and whose message names the offending input or field.
//   - Every tensor in a decoded request satisfies Tensor.Check.
//   - Nothing is allocated in proportion to a declared shape before the
//     body is known to be long enough for it, so a shape such as
//     [1000000000000] costs nothing.
//   - Counts are checked as they are read (Limits, with
//     DecodeInferRequestLimited): BYTES elements against their shapes
//     before any "data" is read, "inputs" and "outputs" entries as they
//     come. Binary BYTES elements are checked in place, never split.
//   - DecodeInferRequestPrefix (prefix.go) refuses, with the same *Error,
//     only what the whole body would be refused for; running out of bytes
//     is ErrTruncated, and it allocates in proportion to the prefix.
//   - A decoded BYTES tensor's Data is always Triton's binary form (a
//     4-byte little-endian length, then the bytes), however it was sent.
//   - parameters.classification is decoded into RequestedOutput; applying
//     it is the caller's business.
//
// Pitfalls for the caller: tensors sent with the binary extension alias
// the request body, so the body must not change while the request is in
// use (JSON tensors own their bytes). How JSON numbers, NaN, nesting and
// BYTES strings are read: docs/http-api.md.
package v2
