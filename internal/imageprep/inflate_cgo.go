//go:build cgo

package imageprep

/*
#cgo LDFLAGS: -ldeflate
#include <libdeflate.h>
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// inflaters pools libdeflate decompressors (one is not safe for
// concurrent use; they hold no state between calls).
var inflaters = sync.Pool{New: func() any { return C.libdeflate_alloc_decompressor() }}

// inflateZlib decompresses the zlib stream src into exactly len(dst)
// bytes, checking its Adler-32. libdeflate does it in one call, about
// twice as fast as zlib or compress/flate, because the output size (the
// PNG's raw size) is known.
func inflateZlib(dst, src []byte) error {
	if len(dst) == 0 || len(src) == 0 {
		return errNotFast
	}
	d := inflaters.Get().(*C.struct_libdeflate_decompressor)
	if d == nil {
		return errors.New("libdeflate: out of memory")
	}
	defer inflaters.Put(d)
	var n C.size_t
	r := C.libdeflate_zlib_decompress(d, unsafe.Pointer(&src[0]), C.size_t(len(src)),
		unsafe.Pointer(&dst[0]), C.size_t(len(dst)), &n)
	if r != C.LIBDEFLATE_SUCCESS || int(n) != len(dst) {
		return errNotFast
	}
	return nil
}

// cgoEnabled says whether this build has the fast inflater.
const cgoEnabled = true
