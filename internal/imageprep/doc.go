// Package imageprep turns one encoded image (JPEG or PNG) into the input
// tensor of an image model: decode, resize, reorder channels, normalise and
// convert to the model's element type, written straight into a caller's
// buffer (a slice of a batch tensor or a shared-memory slot).
//
// Settings are the preprocess section as an operator writes it and as the
// master sends it to prep workers: the one schema and validation (Check)
// of image preprocessing; Settings.Config, resolved against the model's
// input, is the Config that decodes.
//
// The model: a Config describes the tensor a model wants; Preprocess first
// makes every check Inspect makes from the image's header and markers (so
// a decompression or scan bomb costs nothing), decodes to 8-bit RGB, and
// resamples into dst in one separable pass per axis. Normalisation and the dtype conversion are a
// 256-entry table per channel, because every resampled value is an 8-bit
// sample first.
//
// Invariants:
//
//   - Nothing is decoded before Inspect's checks pass, and they bound what
//     decoding costs: at most MaxPixels pixels (ErrTooManyPixels); a JPEG
//     codes no component in more than MaxScansPerComponent scans, counted
//     by walking its markers as libjpeg does, since every scan is a pass
//     over all the component's blocks (ErrTooCostly; libjpeg-turbo's own
//     500-scan limit, TJFLAG_LIMITSCANS, stays on behind it, and
//     TJFLAG_STOPONWARNING stops a decode at the first warning, which is
//     an error here anyway); a PNG whose decoded form (8 bytes a pixel at
//     16 bits, doubled when interlaced) would exceed 4×MaxPixels bytes, the
//     largest 8-bit RGBA image allowed, is ErrTooCostly. Both the cgo and
//     the pure-Go decoders are behind the same checks. InspectPrefix
//     makes them on an image's first bytes (prefix.go): it refuses only
//     what the whole image would be refused for.
//   - Inspect says what decoding will cost in memory, from the header
//     alone (Header.DecodeBytes, cost.go): decoded pixels at the scale
//     they are decoded at, what the decoder holds besides (a progressive
//     JPEG's coefficients), and the bilinear resize's rows, which for a
//     tall, thin image outweigh the rest. It errs high. A caller weighs
//     decodes by it (the prep worker's decode gate).
//   - Memory goes back: buffers above 16 MiB are anonymous mappings,
//     unmapped when the call ends; only smaller ones stay in the pool.
//   - No per-pixel interface call: decoded images are converted to RGB
//     from their Pix, row by row, never through At.
//   - C memory is freed: TurboJPEG handles and libdeflate decompressors
//     live in sync.Pools, and a runtime.AddCleanup frees each when the
//     pool drops it.
//   - Bilinear resizing is Pillow's Image.resize(size, BILINEAR): the same
//     support-scaled triangle filter, the same 22-bit fixed-point weights and
//     the same rounding to 8 bits after each pass. Given the same RGB pixels
//     the result is identical, bit for bit. Nearest is Pillow's NEAREST.
//   - With cgo, JPEGs are decoded by libjpeg-turbo (the library Debian's
//     Pillow uses). When the photo is more than twice the resize's size,
//     it is decoded at a DCT scale (1/8 to 7/8): the smallest that keeps
//     at least twice the resize's size per side, as Pillow's reducing_gap
//     of 2 does. This saves a third or more on large photos, and is the
//     one place results differ from Pillow's Image.resize, which decodes
//     at full size: a few levels near sharp edges.
//   - Without cgo, JPEGs are decoded by image/jpeg at full size; its IDCT
//     and chroma upsampling differ slightly from libjpeg's.
//   - PNGs are size-checked from their IHDR first. The PNGs photos come
//     as (8-bit RGB or RGBA, not interlaced) take a fast path with cgo:
//     chunks and CRCs are checked here, the IDAT stream is inflated in one
//     libdeflate call (its output size is known, which is what makes it
//     about twice as fast as compress/flate) and the rows are unfiltered in
//     place, pixel-identical to image/png. Every other PNG, every PNG the
//     fast path doubts, and every PNG without cgo goes to image/png. Alpha
//     is dropped, not composited, as Pillow's convert("RGB") does; 16-bit
//     samples keep their high byte.
//   - Preprocess is safe for concurrent use; its scratch buffers come from
//     a sync.Pool, so steady-state calls allocate little beyond what the
//     PNG decoder allocates. Nothing a call mapped outlives the call.
//
// EXIF orientation is not applied, as Pillow's Image.open does not apply it.
package imageprep
