// Package imageinput is an image model's input as a prep worker builds
// it: New checks the configured preprocessing against the model's one
// declared input, Tensors decodes a request's images into it (a chunk
// of images per tensor, each image through the decode gate), and the
// prefix check's rules (CheckRawPrefix, CheckPrefixImages) judge images
// from their first bytes. A BYTES element is an image's bytes, or base64
// text of them (Unbase64).
//
// Invariants:
//   - Every image's header is inspected before any is decoded: a request
//     with one image refused from its header (format, pixels, decode
//     cost) or over max_request_pixels costs no decoding.
//   - The Stopper is asked before each image; once it says stop, nothing
//     more is decoded and the error is a *StoppedError with the counts.
//   - An image the client got wrong is an *Error (a 400, naming the
//     image); any other error is the server's.
//   - The prefix check applies the whole request's rules to what the
//     prefix holds, and refuses nothing the whole request would take.
package imageinput
