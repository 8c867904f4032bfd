package imageprep

// scaleFactor is one of the DCT scaling factors a JPEG decoder offers,
// num/den, e.g. 1/4.
type scaleFactor struct{ num, den int }

// scaled is a dimension decoded at f, rounded up: libjpeg's TJSCALED.
func (f scaleFactor) scaled(n int) int { return (n*f.num + f.den - 1) / f.den }

// pickScale returns the factor among fs that decodes a w×h JPEG to the
// fewest pixels that still number at least needW×needH, so the resize
// after it only ever shrinks. 1/1 when none of fs downscales enough.
func pickScale(fs []scaleFactor, w, h, needW, needH int) scaleFactor {
	best := scaleFactor{1, 1}
	for _, f := range fs {
		if f.num > f.den || f.num <= 0 {
			continue
		}
		sw, sh := f.scaled(w), f.scaled(h)
		if sw >= needW && sh >= needH && sw*sh < best.scaled(w)*best.scaled(h) {
			best = f
		}
	}
	return best
}

// dctGap is how many times the resize's size a DCT-scaled decode keeps, at
// least, per side: Pillow's reducing_gap, whose default for thumbnail() is
// also 2. Decoding straight down to the target (gap 1) is about 1.5× faster
// on large photos, but the DCT scaling then does the anti-aliasing, and at
// 224×224 it strays from Pillow's BILINEAR by over 100 levels at sharp
// edges (mean 1–2.4 on the shared photos); with a gap of 2 the bilinear
// filter does most of it and the difference stays within a few levels.
const dctGap = 2
