package imageprep

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// A progressive JPEG is decoded scan by scan, and every scan walks every
// block of the components it codes, however few bytes it takes: 8000
// empty scans fit in 312 KB and kept a decoder busy for half a minute.
// So the scans are counted, from the markers alone, before a pixel is
// decoded, and a JPEG that puts any component in more than
// MaxScansPerComponent scans is refused. That bounds decoding to that many
// passes over the image's blocks. Encoders write far fewer: libjpeg's
// progressive mode (Pillow, jpegtran) 10 scans in all, at most 6 per
// component; mozjpeg about as many. libjpeg-turbo's own limit
// (TJFLAG_LIMITSCANS, 500 scans, checked as it decodes) stays on behind
// this one: 500 scans of a 4096×4096 image still cost 5 s.

// MaxScansPerComponent is the most scans one component of a JPEG may be
// coded in.
const MaxScansPerComponent = 32

// jpegInfo is what the marker walk of a JPEG found.
type jpegInfo struct {
	w, h       int
	components int
	// samples is how many samples a pixel has over all components, in
	// 1/64ths: 192 for 4:4:4 colour, 96 for 4:2:0, 64 for grey (the
	// sampling factors of SOF, relative to the largest).
	samples64 int
	scans     int // SOS markers before EOI
	// busiest is the component (its id) coded in the most scans, and
	// busiestScans that count.
	busiest      byte
	busiestScans int
}

var errNoSOF = errors.New("no SOF marker before the first scan")

// errTruncated: the data ends inside a segment (InspectPrefix passes it).
var errTruncated = errors.New("truncated")

// walkJPEG reads the marker structure of a JPEG as libjpeg does, without
// decoding: segments are skipped by their lengths, the entropy-coded data
// after each SOS is skipped up to the next marker (0xff followed by
// anything but a stuffed 0x00, a fill 0xff or a restart marker), and the
// walk ends at EOI or at the end of the data. It counts the scans each
// component is coded in.
func walkJPEG(b []byte) (jpegInfo, error) {
	var info jpegInfo
	var perComponent [256]int
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
		return info, errors.New("no SOI marker")
	}
	i := 2
	for {
		m, next, ok := nextMarker(b, i)
		if !ok || m == 0xd9 { // end of data, or EOI
			return info, nil
		}
		i = next
		if m >= 0xd0 && m <= 0xd7 || m == 0x01 { // RSTn and TEM: no length
			continue
		}
		if i+2 > len(b) {
			return info, fmt.Errorf("marker 0x%02x at byte %d: %w length", m, i-2, errTruncated)
		}
		n := int(binary.BigEndian.Uint16(b[i:]))
		if n < 2 {
			return info, fmt.Errorf("marker 0x%02x at byte %d: length %d", m, i-2, n)
		}
		if i+n > len(b) {
			return info, fmt.Errorf("marker 0x%02x at byte %d: length %d runs past the end (%w)", m, i-2, n, errTruncated)
		}
		seg := b[i+2 : i+n]
		i += n
		var err error
		switch {
		case isSOF(m):
			err = info.sof(seg)
		case m == 0xda:
			err = info.sos(seg, &perComponent)
			i = skipEntropy(b, i)
		}
		if err != nil {
			return info, err
		}
	}
}

// nextMarker finds the marker at or after b[i], skipping bytes that are
// not one (libjpeg discards them with a warning): it returns the marker
// code and the index after it.
func nextMarker(b []byte, i int) (byte, int, bool) {
	for i+1 < len(b) {
		if b[i] != 0xff {
			i++
			continue
		}
		c := b[i+1]
		switch {
		case c == 0xff: // fill byte
			i++
		case c == 0x00:
			i += 2
		default:
			return c, i + 2, true
		}
	}
	return 0, len(b), false
}

// skipEntropy returns the index of the first marker after the
// entropy-coded data that starts at b[i], other than a restart marker.
func skipEntropy(b []byte, i int) int {
	for i+1 < len(b) {
		j := bytes.IndexByte(b[i:], 0xff)
		if j < 0 {
			return len(b)
		}
		i += j
		if i+1 >= len(b) {
			return len(b)
		}
		c := b[i+1]
		if c != 0x00 && c != 0xff && (c < 0xd0 || c > 0xd7) {
			return i
		}
		i++
	}
	return len(b)
}

// isSOF reports whether m is a start-of-frame marker (SOF0 to SOF15, but
// not DHT 0xc4, JPG 0xc8 or DAC 0xcc).
func isSOF(m byte) bool { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc }

func (info *jpegInfo) sof(seg []byte) error {
	if info.components != 0 {
		return errors.New("more than one SOF marker")
	}
	if len(seg) < 6 || len(seg) != 6+3*int(seg[5]) || seg[5] == 0 {
		return errors.New("SOF segment: bad length")
	}
	info.h, info.w = int(binary.BigEndian.Uint16(seg[1:])), int(binary.BigEndian.Uint16(seg[3:]))
	info.components = int(seg[5])
	info.samples64 = samples64(seg[6:])
	return nil
}

// samples64 is the samples per pixel, in 1/64ths, of the components
// listed in a SOF segment (id, sampling factors h<<4|v, table; 3 bytes
// each): each component has h×v of hmax×vmax samples per pixel block.
// A factor of 0 (invalid, libjpeg refuses it) counts as 1.
func samples64(comps []byte) int {
	hmax, vmax := 1, 1
	for k := 0; k+2 < len(comps); k += 3 {
		hmax, vmax = max(hmax, int(comps[k+1]>>4)), max(vmax, int(comps[k+1]&15))
	}
	n := 0
	for k := 0; k+2 < len(comps); k += 3 {
		h, v := max(int(comps[k+1]>>4), 1), max(int(comps[k+1]&15), 1)
		n += (64*h*v + hmax*vmax - 1) / (hmax * vmax)
	}
	return n
}

// sos counts one scan against each component it codes.
func (info *jpegInfo) sos(seg []byte, perComponent *[256]int) error {
	if info.components == 0 {
		return errNoSOF
	}
	if len(seg) < 1 || len(seg) != 4+2*int(seg[0]) || seg[0] == 0 {
		return errors.New("SOS segment: bad length")
	}
	info.scans++
	for k := range int(seg[0]) {
		id := seg[1+2*k]
		perComponent[id]++
		if perComponent[id] > info.busiestScans {
			info.busiest, info.busiestScans = id, perComponent[id]
		}
	}
	return nil
}

// checkScans refuses a JPEG whose scans would cost more than
// MaxScansPerComponent passes over its blocks. With soFar (the walk of a
// prefix, InspectPrefix) the counts are lower bounds, and say so.
func (info *jpegInfo) checkScans(soFar bool) error {
	if info.busiestScans > MaxScansPerComponent {
		atLeast := ""
		if soFar {
			atLeast = "at least "
		}
		return fmt.Errorf("%w: JPEG of %d×%d has %s%d scans and codes component %d in %[4]s%d of them, over the limit of %d per component; re-encode it (a progressive JPEG needs about 10 scans in all)",
			ErrTooCostly, info.w, info.h, atLeast, info.scans, info.busiest, info.busiestScans, MaxScansPerComponent)
	}
	return nil
}
