package imageprep

import "math"

// precisionBits is Pillow's PRECISION_BITS for 8-bit images (32-8-2): the
// weights are fixed-point with 22 fractional bits, so a sum of 255×weights
// fits an int32 with room for rounding.
const precisionBits = 32 - 8 - 2

// kernel holds one axis of a bilinear resize, as Pillow's precompute_coeffs
// and normalize_coeffs_8bpc compute it: for output index i, the taps
// n[i] input samples from start[i] on, weighted by w[i*ksize:].
type kernel struct {
	start, n []int
	ksize    int
	w        []int32
	// first and last bound the input samples any output index reads.
	first, last int
}

// build computes the kernel of the output indices from..from+count-1 of a
// resize from inSize to outSize samples. Computing only a window of the
// outputs is exactly resize-then-crop, since each output's weights depend
// on its own index only.
func (k *kernel) build(inSize, outSize, from, count int) {
	scale := float64(inSize) / float64(outSize)
	filterscale := max(scale, 1)
	// Downscaling widens the triangle to cover every input sample, which is
	// what keeps Pillow's BILINEAR from aliasing.
	support := filterscale // the triangle's own support is 1
	k.ksize = int(math.Ceil(support))*2 + 1
	k.start = grow(k.start, count)
	k.n = grow(k.n, count)
	k.w = grow(k.w, count*k.ksize)
	ss := 1 / filterscale // Pillow multiplies by the reciprocal; so must we
	var tmp [64]float64   // enough taps for downscaling up to 31×
	weights := tmp[:0]
	if k.ksize > len(tmp) {
		weights = make([]float64, 0, k.ksize)
	}
	k.first, k.last = inSize, 0
	for i := range count {
		center := (float64(from+i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		n := min(int(center+support+0.5), inSize) - lo
		weights = weights[:n]
		sum := 0.0
		for x := range n {
			wt := triangle((float64(x+lo) - center + 0.5) * ss)
			weights[x] = wt
			sum += wt
		}
		row := k.w[i*k.ksize : (i+1)*k.ksize]
		clear(row)
		for x, wt := range weights {
			if sum != 0 {
				wt /= sum
			}
			row[x] = fixed(wt)
		}
		k.start[i], k.n[i] = lo, n
		k.first, k.last = min(k.first, lo), max(k.last, lo+n)
	}
}

// triangle is the bilinear filter.
func triangle(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

// fixed rounds a weight to precisionBits fractional bits, away from zero
// at halves, as Pillow does.
func fixed(w float64) int32 {
	if w < 0 {
		return int32(-0.5 + w*(1<<precisionBits))
	}
	return int32(0.5 + w*(1<<precisionBits))
}

// clip8 turns a fixed-point sum (which started at one half, for rounding)
// into an 8-bit sample.
func clip8(s int32) byte {
	if s >= 255<<precisionBits {
		return 255
	}
	if s <= 0 {
		return 0
	}
	return byte(s >> precisionBits)
}
