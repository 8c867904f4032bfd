package respcache

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Keys. A key is SHA-256 (Key) of everything that changes an answer: the
// model's name and processing config, every input (name, datatype, shape,
// bytes), the requested outputs and their classification, all hashed once,
// then hashed again with the content identity of the model file that
// computed the answer (internal/modelid: the SHA-256 of its bytes, sent by
// the infer worker with each answer; worker/prep/modelcache says why not
// the one the prep worker believes). For an image model the inputs are the
// image bytes as sent, hashed before they are decoded (worker/prep's
// imageKey), so a hit costs no decoding. Fields are length-prefixed, so no
// two different requests serialise alike; two requests then share a key
// only through a SHA-256 collision (2^-128 for a birthday bound), far
// below the hardware's error rate, which is why the key bytes themselves
// are the only comparison.

// KeyBuilder hashes a request's fields into a Key. Every field is written
// with its length (or as a fixed-width integer), so two different
// sequences of fields never hash the same bytes: "ab"+"c" and "a"+"bc" and
// shape [2,3] against [6] all differ.
type KeyBuilder struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
}

// NewKeyBuilder starts a key with identity: what about the model changes
// its answers (worker/prep hashes its name and processing settings first,
// then that digest under the content identity of the model file that
// computed the answer), so that a reload that changes them changes every
// key.
func NewKeyBuilder(identity string) *KeyBuilder {
	b := &KeyBuilder{h: sha256.New()}
	b.String(identity)
	return b
}

// String adds a length-prefixed string.
func (b *KeyBuilder) String(s string) {
	b.Int(int64(len(s)))
	b.h.Write([]byte(s))
}

// Bytes adds length-prefixed bytes.
func (b *KeyBuilder) Bytes(p []byte) {
	b.Int(int64(len(p)))
	b.h.Write(p)
}

// Int adds a fixed-width integer.
func (b *KeyBuilder) Int(n int64) {
	binary.LittleEndian.PutUint64(b.buf[:8], uint64(n))
	b.h.Write(b.buf[:8])
}

// Sum is the key.
func (b *KeyBuilder) Sum() Key {
	var k Key
	b.h.Sum(k[:0])
	return k
}
