//go:build cgo

package imageprep

/*
#cgo LDFLAGS: -lturbojpeg
#include <turbojpeg.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// decompressor owns one TurboJPEG handle; a handle is not safe for
// concurrent use, so each call takes one from the pool. The handle is
// destroyed when the pool drops the decompressor and the GC collects it, or
// at once after an error: a handle that failed mid-stream is left in a
// state that makes its next header read fail.
type decompressor struct {
	h       C.tjhandle
	cleanup runtime.Cleanup
}

var decompressors = sync.Pool{New: func() any {
	d := &decompressor{h: C.tjInitDecompress()}
	if d.h != nil {
		d.cleanup = runtime.AddCleanup(d, func(h C.tjhandle) { C.tjDestroy(h) }, d.h)
	}
	return d
}}

// release returns d to the pool, or destroys its handle if err is set.
func (d *decompressor) release(err error) {
	if err == nil {
		decompressors.Put(d)
		return
	}
	d.cleanup.Stop()
	C.tjDestroy(d.h)
	d.h = nil
}

// errString is TurboJPEG's message for the last error on d's handle.
func (d *decompressor) errString() string { return C.GoString(C.tjGetErrorStr2(d.h)) }

// decodeJPEG reads the JPEG's header, checks its size, and decodes it with
// libjpeg-turbo at the smallest DCT scale that keeps at least dctGap times
// the resize's size. Warnings are errors: a truncated JPEG decodes with a
// grey bottom in libjpeg and fails in Pillow, so it is ErrCorrupt here,
// and libjpeg stops at the first one (TJFLAG_STOPONWARNING) rather than
// decode the rest for nothing. TJFLAG_LIMITSCANS makes it refuse a JPEG
// past 500 scans as it decodes: a bound behind Inspect's tighter count.
func (c *Config) decodeJPEG(data []byte, s *scratch) (p pixels, err error) {
	d := decompressors.Get().(*decompressor)
	if d.h == nil {
		return pixels{}, fmt.Errorf("imageprep: could not create a TurboJPEG decompressor: %s",
			C.GoString(C.tjGetErrorStr2(nil)))
	}
	defer func() { d.release(err) }()
	buf := (*C.uchar)(unsafe.Pointer(unsafe.SliceData(data)))
	size := C.ulong(len(data))
	var w, h, subsamp, cs C.int
	if C.tjDecompressHeader3(d.h, buf, size, &w, &h, &subsamp, &cs) != 0 {
		return pixels{}, fmt.Errorf("%w: JPEG header: %s", ErrCorrupt, d.errString())
	}
	if err := c.checkSize("JPEG", int(w), int(h)); err != nil {
		return pixels{}, err
	}
	if cs == C.TJCS_CMYK || cs == C.TJCS_YCCK {
		return pixels{}, fmt.Errorf("%w: CMYK JPEG; convert it to RGB", ErrUnsupportedFormat)
	}
	f := c.jpegScale(int(w), int(h))
	sw, sh := f.scaled(int(w)), f.scaled(int(h))
	rgb := s.rgb.grow(sw * sh * 3)
	if C.tjDecompress2(d.h, buf, size, (*C.uchar)(unsafe.Pointer(&rgb[0])),
		C.int(sw), 0, C.int(sh), C.TJPF_RGB, decodeFlags) != 0 {
		return pixels{}, fmt.Errorf("%w: JPEG of %d×%d: %s", ErrCorrupt, w, h, d.errString())
	}
	return pixels{pix: rgb, w: sw, h: sh, stride: sw * 3, bpp: 3, origW: int(w), origH: int(h)}, nil
}

// jpegScale is the DCT scale a w×h JPEG is decoded at: the smallest that
// keeps at least dctGap times the resize's size per side.
func (c *Config) jpegScale(w, h int) scaleFactor {
	if c.fullDecode {
		return scaleFactor{1, 1}
	}
	g := c.geometry(w, h)
	return pickScale(scaleFactors(), w, h, dctGap*g.rw, dctGap*g.rh)
}

// jpegDecoderBytes is what libjpeg-turbo holds of its own to decode a
// JPEG of the given samples (pixels × samples per pixel) and scans: a
// JPEG of more than one scan keeps all its DCT coefficients, 2 bytes
// each, until the last; one of a single scan needs a few rows.
func jpegDecoderBytes(samples int64, scans int) int64 {
	if scans > 1 {
		return 2 * samples
	}
	return 0
}

// decodeFlags stop a decode at the first warning and past 500 scans.
const decodeFlags = C.TJFLAG_STOPONWARNING | C.TJFLAG_LIMITSCANS

// scaleFactors lists the DCT scaling factors this libjpeg-turbo offers,
// read once: the library's list never changes, and every JPEG's cost and
// decode ask for it.
var scaleFactors = sync.OnceValue(readScaleFactors)

func readScaleFactors() []scaleFactor {
	var n C.int
	p := C.tjGetScalingFactors(&n)
	if p == nil {
		return nil
	}
	fs := make([]scaleFactor, 0, int(n))
	for _, f := range unsafe.Slice(p, int(n)) {
		fs = append(fs, scaleFactor{int(f.num), int(f.denom)})
	}
	return fs
}
