// Package imageprep turns one encoded image (JPEG or PNG) into the input
// tensor of an image model: decode, resize, reorder channels, normalise
// and convert to the model's element type, written straight into a
// caller's buffer (a slice of a batch tensor or a shared-memory slot).
// Settings is the preprocess section as an operator writes it, with its one
// validation (Check); Settings.Config, resolved against the model's input,
// is the Config whose Preprocess decodes.
//
// Invariants:
//
//   - Nothing is decoded before Inspect's header checks pass, and they
//     bound what decoding costs: MaxPixels (ErrTooManyPixels), a JPEG's
//     scans per component (MaxScansPerComponent, jpeg_scans.go) and a
//     PNG's decoded size (ErrTooCostly). The cgo and pure-Go decoders sit
//     behind the same checks; InspectPrefix (prefix.go) refuses only what
//     the whole image would be refused for.
//   - Header.DecodeBytes (cost.go) says what decoding will cost in memory,
//     from the header alone, and errs high; the prep worker's decode gate
//     weighs decodes by it.
//   - Bilinear resizing is Pillow's Image.resize(size, BILINEAR), bit for
//     bit on the same RGB pixels (kernel.go, resample.go); nearest is
//     Pillow's NEAREST. The one intended difference is a JPEG decoded at a
//     DCT scale (dctscale.go, cgo only).
//   - Buffers above 16 MiB are mappings unmapped when the call ends
//     (scratch.go); nothing a call mapped outlives it, and C handles
//     (TurboJPEG, libdeflate) are freed when their pool drops them.
//   - Preprocess is safe for concurrent use. Errors caused by the image
//     wrap ErrUnsupportedFormat, ErrTooManyPixels, ErrTooCostly or
//     ErrCorrupt.
//
// How results differ from Pillow (DCT scaling, image/jpeg without cgo,
// alpha, 16-bit samples, EXIF) and the refusals: docs/images.md.
package imageprep
