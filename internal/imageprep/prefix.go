package imageprep

import (
	"errors"
	"fmt"
)

// InspectPrefix is Inspect for the first bytes of an encoded image whose
// rest has not arrived (the master's prefix check of a large body): it
// makes Inspect's checks on what is present and refuses only what the
// whole image would be refused for, whatever its remaining bytes. The
// format, once the prefix holds enough bytes to tell it; a PNG's IHDR
// (size, decoded cost) once the prefix holds it; a JPEG's SOF (size) and
// the scans counted so far (ErrTooCostly: more scans can only add to
// them). An image that ends where the prefix does is not corrupt, so the
// walk's "runs past the end" passes.
func (c *Config) InspectPrefix(prefix []byte) (Header, error) {
	switch f := sniff(prefix); {
	case f == "JPEG":
		return c.inspectJPEGPrefix(prefix)
	case f == "PNG" && len(prefix) < pngHeaderLen:
		return Header{Format: "PNG"}, nil
	case f == "PNG":
		h, err := c.inspectPNG(prefix)
		return h.Header, err
	case len(prefix) < sniffLen:
		return Header{}, nil // too short to tell the format
	}
	return c.Inspect(prefix) // neither JPEG nor PNG: refused as a whole
}

// sniffLen is the most bytes sniff looks at.
const sniffLen = 12

// pngHeaderLen is the signature and the IHDR chunk.
const pngHeaderLen = 8 + 8 + 13 + 4

func (c *Config) inspectJPEGPrefix(data []byte) (Header, error) {
	info, err := walkJPEG(data)
	if err != nil && !errors.Is(err, errTruncated) {
		return Header{}, fmt.Errorf("%w: JPEG markers: %v", ErrCorrupt, err)
	}
	h := Header{Format: "JPEG", Width: info.w, Height: info.h}
	if info.components == 0 {
		return h, nil // the SOF may come later
	}
	if err := c.checkSize("JPEG", info.w, info.h); err != nil {
		return h, err
	}
	return h, info.checkScans(true) // a prefix: the counts are lower bounds
}
