package imageprep

import (
	"encoding/binary"
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// writer puts finished 8-bit RGB rows into the tensor. Every output
// element is a function of one 8-bit sample and its channel, so scaling,
// normalisation and the dtype conversion are one table lookup.
type writer struct {
	dst  []byte
	w, h int
	nhwc bool
	bgr  bool
	size int             // bytes per element
	lut  *[3][256]uint32 // per output channel: the element's bits
}

// newWriter fills lut for c and returns a writer into dst.
func (c *Config) newWriter(dst []byte, lut *[3][256]uint32) writer {
	dt := c.dtype()
	scale := c.Scale
	if scale == 0 {
		scale = 1
	}
	for ch := range 3 {
		std := c.Std[ch]
		if std == 0 {
			std = 1
		}
		for v := range 256 {
			// The same float32 operations, in the same order, as
			// (x*scale - mean) / std over a float32 array in numpy.
			f := (float32(v)*scale - c.Mean[ch]) / std
			switch dt {
			case tensor.FP16:
				lut[ch][v] = uint32(fp16Bits(f))
			case tensor.Uint8:
				lut[ch][v] = uint32(v)
			default:
				lut[ch][v] = math.Float32bits(f)
			}
		}
	}
	return writer{dst: dst, w: c.Width, h: c.Height, nhwc: c.Layout == NHWC,
		bgr: c.ChannelOrder == BGR, size: dt.Size(), lut: lut}
}

// put writes output row y from rgb, 3 samples per pixel in R, G, B order.
func (wr *writer) put(y int, rgb []byte) {
	for oc := range 3 {
		sc := oc // the source sample feeding output channel oc
		if wr.bgr {
			sc = 2 - oc
		}
		// Element index of (y, x=0, oc) and the step from one x to the next.
		first, step := (oc*wr.h+y)*wr.w, 1
		if wr.nhwc {
			first, step = y*wr.w*3+oc, 3
		}
		wr.channel(wr.dst[first*wr.size:], step*wr.size, rgb[sc:], &wr.lut[oc])
	}
}

// channel writes one channel of one row: w elements, step bytes apart,
// from every third byte of src.
func (wr *writer) channel(dst []byte, step int, src []byte, lut *[256]uint32) {
	n := wr.w
	switch wr.size {
	case 4:
		for x := range n {
			binary.LittleEndian.PutUint32(dst[x*step:], lut[src[3*x]])
		}
	case 2:
		for x := range n {
			binary.LittleEndian.PutUint16(dst[x*step:], uint16(lut[src[3*x]]))
		}
	default:
		for x := range n {
			dst[x*step] = byte(lut[src[3*x]])
		}
	}
}
