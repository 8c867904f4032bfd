package imageprep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Header is what an encoded image declares about itself, read without
// decoding a pixel.
type Header struct {
	Format        string // "JPEG" or "PNG"
	Width, Height int
	// DecodeBytes is about how much memory Preprocess holds at its peak
	// to decode and resize the image (see cost.go), an estimate that
	// errs high; 0 when Inspect refused the image.
	DecodeBytes int64
}

// Pixels is Width×Height.
func (h Header) Pixels() int64 { return int64(h.Width) * int64(h.Height) }

// Inspect reads an encoded image's header and makes every check that
// needs no decoding: the format, MaxPixels, and the limits on what
// decoding may cost (ErrTooCostly: a JPEG's scans, a PNG's decoded size).
// Its errors are Preprocess's; Preprocess makes the same checks first.
// A caller with several images inspects them all before decoding any, to
// refuse a request whose images together are too much (see the prep
// worker's max_request_pixels) at the cost of reading headers only. A
// JPEG's markers are walked to its end, which costs a scan of its bytes,
// a tiny fraction of decoding them.
func (c *Config) Inspect(encoded []byte) (Header, error) {
	switch f := sniff(encoded); f {
	case "JPEG":
		return c.inspectJPEG(encoded)
	case "PNG":
		h, err := c.inspectPNG(encoded)
		return h.Header, err
	default:
		return Header{}, fmt.Errorf("%w: %s (want JPEG or PNG)", ErrUnsupportedFormat, f)
	}
}

func (c *Config) inspectJPEG(data []byte) (Header, error) {
	info, err := walkJPEG(data)
	if err != nil {
		return Header{}, fmt.Errorf("%w: JPEG markers: %v", ErrCorrupt, err)
	}
	if info.components == 0 {
		return Header{}, fmt.Errorf("%w: JPEG markers: %v", ErrCorrupt, errNoSOF)
	}
	h := Header{Format: "JPEG", Width: info.w, Height: info.h}
	if err := c.checkSize("JPEG", info.w, info.h); err != nil {
		return h, err
	}
	if err := info.checkScans(false); err != nil {
		return h, err
	}
	h.DecodeBytes = c.jpegCost(info)
	return h, nil
}

// pngIHDR is a PNG's IHDR.
type pngIHDR struct {
	Header
	depth, colour, interlace byte
}

// inspectPNG reads the IHDR chunk, which a PNG must start with, and
// checks the size and the decoded size.
func (c *Config) inspectPNG(data []byte) (pngIHDR, error) {
	h, err := parseIHDR(data)
	if err != nil {
		return h, fmt.Errorf("%w: PNG header: %v", ErrCorrupt, err)
	}
	if err := c.checkSize("PNG", h.Width, h.Height); err != nil {
		return h, err
	}
	if err := c.checkPNGCost(h); err != nil {
		return h, err
	}
	h.DecodeBytes = c.pngCost(h, len(data))
	return h, nil
}

var errBadIHDR = errors.New("the first chunk is not a 13-byte IHDR with a valid CRC")

func parseIHDR(data []byte) (pngIHDR, error) {
	var h pngIHDR
	if len(data) < 8+8+13+4 || string(data[8+4:8+8]) != "IHDR" || binary.BigEndian.Uint32(data[8:]) != 13 {
		return h, errBadIHDR
	}
	chunk := data[8+4 : 8+8+13]
	if crc32.ChecksumIEEE(chunk) != binary.BigEndian.Uint32(data[8+8+13:]) {
		return h, errBadIHDR
	}
	body := chunk[4:]
	w, ht := binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:])
	if w > 1<<31-1 || ht > 1<<31-1 {
		return h, fmt.Errorf("IHDR declares %d×%d pixels", w, ht)
	}
	h.Header = Header{Format: "PNG", Width: int(w), Height: int(ht)}
	h.depth, h.colour, h.interlace = body[8], body[9], body[12]
	if !validPNGDepth(h.colour, h.depth) {
		return h, fmt.Errorf("colour type %d with bit depth %d", h.colour, h.depth)
	}
	if body[10] != 0 || body[11] != 0 || h.interlace > 1 {
		return h, fmt.Errorf("compression %d, filter %d, interlace %d: unknown methods", body[10], body[11], h.interlace)
	}
	return h, nil
}

// validPNGDepth lists the bit depths the PNG specification allows for
// each colour type.
func validPNGDepth(colour, depth byte) bool {
	switch colour {
	case 0: // grey
		return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16
	case 3: // palette
		return depth == 1 || depth == 2 || depth == 4 || depth == 8
	case 2, 4, 6: // RGB, grey+alpha, RGBA
		return depth == 8 || depth == 16
	}
	return false
}

// decodedBytes is how much memory image/png takes to decode the PNG: its
// image is 8 bytes a pixel for 16-bit samples, up to 4 for 8-bit ones
// (grey with a transparent colour becomes NRGBA), and an interlaced PNG
// is decoded pass by pass into images of its own size in all before
// being copied into the final one, which doubles it.
func (h *pngIHDR) decodedBytes() int64 {
	per := int64(4)
	if h.depth == 16 {
		per = 8
	}
	if h.interlace == 1 {
		per *= 2
	}
	return h.Pixels() * per
}

// checkPNGCost refuses a PNG whose decoding would take more memory (and,
// as inflating is proportional to it, more time) than the largest 8-bit
// RGBA image MaxPixels allows: 4 bytes a pixel. 8-bit PNGs that are not
// interlaced always fit; 16-bit and interlaced ones fit up to half, or a
// quarter, of MaxPixels. A 290 KB 16-bit RGBA PNG of 6000×6000 would
// otherwise take 320 MB and seconds.
func (c *Config) checkPNGCost(h pngIHDR) error {
	limit := 4 * c.maxPixels()
	if n := h.decodedBytes(); n > limit {
		return fmt.Errorf("%w: PNG of %d×%d at %d bits per sample%s takes %d bytes to decode, over the limit of %d (4 bytes for each of the %d pixels max_pixels allows); save it with 8 bits per sample, not interlaced",
			ErrTooCostly, h.Width, h.Height, h.depth, interlacedWord(h.interlace), n, limit, c.maxPixels())
	}
	return nil
}

func interlacedWord(i byte) string {
	if i == 1 {
		return ", interlaced,"
	}
	return ""
}
