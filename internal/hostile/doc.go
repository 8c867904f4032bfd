// Package hostile builds the payloads a hostile client sends to make one
// request cost the server as much as possible: image decompression and
// scan bombs, BYTES floods, and gzip and deflate (Content-Encoding)
// bombs. Tests and the hostile-client suite send them
// to check that each is refused early, or bounded, with a defined answer.
//
// Each generator is deterministic and cheap to run (it writes the
// compressed form directly; nothing of the expanded size is ever
// allocated), and each payload is valid as far as its claim goes: the
// JPEG parses as a progressive JPEG, the PNG as a 16-bit RGBA PNG with
// correct CRCs and Adler-32, the JSON as a V2 infer request (also once a
// compression bomb is inflated). What makes it
// hostile is the work it asks for, not a malformed byte.
package hostile
