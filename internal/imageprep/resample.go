package imageprep

// pixels is a decoded image: rows of 8-bit samples, bpp bytes per pixel,
// the first three R, G, B.
type pixels struct {
	pix          []byte
	w, h         int // decoded size
	stride, bpp  int
	origW, origH int // size the header declares; a DCT-scaled decode is smaller
}

// geometry says how an image maps onto the tensor: resize the whole image
// to rw×rh, then keep the Width×Height window whose top left is (ox, oy).
type geometry struct{ rw, rh, ox, oy int }

// geometry computes the mapping for an image of w×h pixels.
func (c *Config) geometry(w, h int) geometry {
	W, H := c.Width, c.Height
	if c.Resize != ShorterCrop {
		return geometry{rw: W, rh: H}
	}
	g := geometry{rw: W, rh: H}
	if int64(w)*int64(H) <= int64(h)*int64(W) { // the width binds
		g.rh = max(H, int(int64(h)*int64(W)/int64(w)))
	} else {
		g.rw = max(W, int(int64(w)*int64(H)/int64(h)))
	}
	// torchvision's CenterCrop rounds the offset with Python's round: half
	// to even.
	g.ox, g.oy = halfEven(g.rw-W), halfEven(g.rh-H)
	return g
}

// halfEven is round(n/2), ties to even.
func halfEven(n int) int {
	q := n / 2
	if n%2 == 1 && q%2 == 1 {
		q++
	}
	return q
}

// resample writes src, mapped by g, into w's tensor.
func (c *Config) resample(wr *writer, src pixels, s *scratch) {
	g := c.geometry(src.origW, src.origH)
	s.row = grow(s.row, c.Width*3)
	if c.Interpolation == Nearest {
		nearest(wr, src, g, s)
		return
	}
	bilinear(wr, src, g, s)
}

// bilinear is Pillow's two-pass resize: horizontal into 8-bit rows, then
// vertical, rounding to 8 bits after each pass.
//
// An axis whose size does not change is copied, not resampled, as Pillow
// does (its weights would be exactly 1 and 0 anyway): a 224×224 image
// headed for a 224×224 tensor is only converted.
func bilinear(wr *writer, src pixels, g geometry, s *scratch) {
	W, H := wr.w, wr.h
	sameX, sameY := src.w == g.rw, src.h == g.rh
	first, rows := g.oy, H
	if !sameY {
		s.ky.build(src.h, g.rh, g.oy, H)
		first, rows = s.ky.first, s.ky.last-s.ky.first
	}
	if !sameX {
		s.kx.build(src.w, g.rw, g.ox, W)
	}
	tmp := s.tmp.grow(rows * W * 3)
	for r := range rows {
		out, in := tmp[r*W*3:(r+1)*W*3], src.pix[(first+r)*src.stride:]
		if sameX {
			copyRGB(out, in[g.ox*src.bpp:], src.bpp)
		} else {
			horizontal(out, in, src.bpp, &s.kx)
		}
	}
	if sameY {
		for y := range H {
			wr.put(y, tmp[y*W*3:(y+1)*W*3])
		}
		return
	}
	s.acc = grow(s.acc, W*3)
	for y := range H {
		vertical(s.row, s.acc, tmp, W*3, s.ky.start[y]-first, s.ky.w[y*s.ky.ksize:][:s.ky.n[y]])
		wr.put(y, s.row)
	}
}

// copyRGB copies len(out)/3 pixels of bpp bytes from in, keeping R, G, B.
func copyRGB(out, in []byte, bpp int) {
	if bpp == 3 {
		copy(out, in[:len(out)])
		return
	}
	for x := range len(out) / 3 {
		q := in[x*bpp : x*bpp+3]
		o := out[3*x : 3*x+3]
		o[0], o[1], o[2] = q[0], q[1], q[2]
	}
}

// horizontal resamples one row of bpp-byte pixels into out, 3 bytes per
// pixel. The loops are written so the compiler can drop bounds checks.
func horizontal(out, in []byte, bpp int, k *kernel) {
	const half = 1 << (precisionBits - 1)
	for x := range len(out) / 3 {
		w := k.w[x*k.ksize:][:k.n[x]]
		p := in[k.start[x]*bpp:]
		s0, s1, s2 := int32(half), int32(half), int32(half)
		if bpp == 3 {
			p = p[:3*len(w)]
			i := 0
			for ; i+1 < len(w); i += 2 { // two taps per iteration
				j := 3 * i
				if j+5 >= len(p) { // never: proves the loads in range
					break
				}
				w0, w1 := w[i], w[i+1]
				s0 += int32(p[j])*w0 + int32(p[j+3])*w1
				s1 += int32(p[j+1])*w0 + int32(p[j+4])*w1
				s2 += int32(p[j+2])*w0 + int32(p[j+5])*w1
			}
			if i < len(w) && 3*i+2 < len(p) {
				s0 += int32(p[3*i]) * w[i]
				s1 += int32(p[3*i+1]) * w[i]
				s2 += int32(p[3*i+2]) * w[i]
			}
		} else {
			for _, wt := range w {
				q := p[:3]
				s0 += int32(q[0]) * wt
				s1 += int32(q[1]) * wt
				s2 += int32(q[2]) * wt
				p = p[bpp:]
			}
		}
		o := out[3*x : 3*x+3]
		o[0], o[1], o[2] = clip8(s0), clip8(s1), clip8(s2)
	}
}

// vertical computes one output row from the rows of tmp (n bytes each)
// starting at row start, weighted by w.
func vertical(out []byte, acc []int32, tmp []byte, n, start int, w []int32) {
	const half = 1 << (precisionBits - 1)
	acc = acc[:n]
	for i := range acc {
		acc[i] = half
	}
	// Two rows per sweep of acc: half the loads and stores of acc.
	i := 0
	for ; i+1 < len(w); i += 2 {
		w0, w1 := w[i], w[i+1]
		r0 := tmp[(start+i)*n:][:n]
		r1 := tmp[(start+i+1)*n:][:n]
		a := acc[:n]
		for j := range a {
			a[j] += int32(r0[j])*w0 + int32(r1[j])*w1
		}
	}
	if i < len(w) {
		wt := w[i]
		row := tmp[(start+i)*n:][:n]
		a := acc[:len(row)]
		for j, v := range row {
			a[j] += int32(v) * wt
		}
	}
	out = out[:n]
	for j, a := range acc {
		out[j] = clip8(a)
	}
}

// nearest is Pillow's NEAREST resize: output pixel i takes input pixel
// floor((i+0.5)×in/out), with the coordinate accumulated in steps as
// Pillow's ImagingScaleAffine does, so rounding agrees too.
func nearest(wr *writer, src pixels, g geometry, s *scratch) {
	W, H := wr.w, wr.h
	s.idx = grow(s.idx, W+H)
	xs, ys := s.idx[:W], s.idx[W:]
	nearestIndex(xs, src.w, g.rw, g.ox)
	nearestIndex(ys, src.h, g.rh, g.oy)
	for y := range H {
		in := src.pix[ys[y]*src.stride:]
		for x, xi := range xs {
			copy(s.row[3*x:3*x+3], in[xi*src.bpp:xi*src.bpp+3])
		}
		wr.put(y, s.row)
	}
}

// nearestIndex fills idx with the source indices of outputs
// from..from+len(idx)-1 of a resize from inSize to outSize.
func nearestIndex(idx []int, inSize, outSize, from int) {
	step := float64(inSize) / float64(outSize)
	pos := step * 0.5
	for range from {
		pos += step
	}
	for i := range idx {
		idx[i] = min(int(pos), inSize-1)
		pos += step
	}
}
