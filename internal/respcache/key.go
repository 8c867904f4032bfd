package respcache

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

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
