package imageinput

import "fmt"

// CheckRawPrefix judges the first bytes of a raw image body of size bytes
// (-1: unknown): the image's header as far as it is present.
func (im *Input) CheckRawPrefix(prefix []byte, size int64) error {
	if err := im.CheckCount(1); err != nil {
		return err
	}
	return im.CheckPrefixImages(nil, prefix, max(size, int64(len(prefix))))
}

// CheckPrefixImages inspects the whole images (as tensors does, request
// pixels included), then the start of the next one, cut, adding its
// pixels once its header is present. cutSize is the cut image's whole
// length for messages (-1: unknown).
func (im *Input) CheckPrefixImages(whole [][]byte, cut []byte, cutSize int64) error {
	if _, err := im.inspect(whole); err != nil {
		return err
	}
	var total int64
	for _, img := range whole {
		h, _ := im.cfg.Inspect(img) // passed just above
		total += h.Pixels()
	}
	i, n := len(whole), len(whole)+1
	h, err := im.cfg.InspectPrefix(cut)
	if err != nil {
		if !isImageError(err) {
			return nil
		}
		what := fmt.Sprintf("at least %d bytes", len(cut))
		if cutSize >= 0 {
			what = fmt.Sprintf("%d bytes", cutSize)
		}
		return &Error{fmt.Sprintf("input %q: image %d of %d (%s): %v", im.spec.Name, i, n, what, err)}
	}
	if h.DecodeBytes > 0 {
		if err := im.Gate.Check(h.DecodeBytes); err != nil {
			return &Error{fmt.Sprintf("input %q: image %d (%s %d×%d): %v", im.spec.Name, i, h.Format, h.Width, h.Height, err)}
		}
	}
	if total += h.Pixels(); total > im.maxRequestPixels {
		return &Error{fmt.Sprintf("input %q: image %d (%s %d×%d) brings the request to %d pixels, over this model's max_request_pixels (%d); send fewer or smaller images",
			im.spec.Name, i, h.Format, h.Width, h.Height, total, im.maxRequestPixels)}
	}
	return nil
}
