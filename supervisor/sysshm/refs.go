package sysshm

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// RefsHeader carries, from the master to the prep worker, the inputs
// and outputs of an infer request that are in regions (Ref,
// FormatRefs): the master checks them and sends their place instead of
// their bytes, and the prep worker reads the inputs' bytes and writes
// the outputs' itself (Reader). It is the master's: a
// client's is removed with the other internal headers
// (admission.ClientDeadline), so a client can name no descriptor.
const RefsHeader = "Supervisor-Regions"

// Ref is one input's or output's bytes in a region, as the master sends
// it to the prep worker: Size bytes of the object from Off (in the
// object, the region's offset included). An input's (Output "") go at
// Pos of the request's binary part (the body forwarded carries the other
// inputs' bytes and leaves these out); output Output's are written
// there, and Size is the room it has (Deliver), Echo the
// shared_memory_offset its answer repeats (-1: none, as the request had
// none). ID names the region to the master's descriptor service
// (Registry.ServeWorker); Dev and Ino are the object's, which the worker
// checks the descriptor against; Name (the region's) and Key are for
// messages and the answer.
type Ref struct {
	Pos, ID, Dev, Ino, Off, Size uint64
	Output                       string
	Echo                         int64
	Name, Key                    string
}

// FormatRefs is refs as RefsHeader's value: one entry a ref,
// "pos:id:dev:ino:off:size:echo:output:name:key", joined by ",", the
// strings escaped.
func FormatRefs(refs []Ref) string {
	var b strings.Builder
	for i, r := range refs {
		if i > 0 {
			b.WriteByte(',')
		}
		for _, n := range [...]uint64{r.Pos, r.ID, r.Dev, r.Ino, r.Off, r.Size} {
			b.WriteString(strconv.FormatUint(n, 10))
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatInt(r.Echo, 10))
		b.WriteByte(':')
		b.WriteString(url.QueryEscape(r.Output))
		b.WriteByte(':')
		b.WriteString(url.QueryEscape(r.Name))
		b.WriteByte(':')
		b.WriteString(url.QueryEscape(r.Key))
	}
	return b.String()
}

// ParseRefs reads FormatRefs's value.
func ParseRefs(s string) ([]Ref, error) {
	var refs []Ref
	for _, e := range strings.Split(s, ",") {
		f := strings.Split(e, ":")
		if len(f) != 10 {
			return nil, fmt.Errorf("%s entry %q: want 10 fields", RefsHeader, e)
		}
		var n [6]uint64
		for i := range n {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s entry %q: %w", RefsHeader, e, err)
			}
			n[i] = v
		}
		echo, err0 := strconv.ParseInt(f[6], 10, 64)
		out, err1 := url.QueryUnescape(f[7])
		name, err2 := url.QueryUnescape(f[8])
		key, err3 := url.QueryUnescape(f[9])
		if err0 != nil || err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("%s entry %q: bad offset, output, name or key", RefsHeader, e)
		}
		refs = append(refs, Ref{Pos: n[0], ID: n[1], Dev: n[2], Ino: n[3], Off: n[4], Size: n[5],
			Echo: echo, Output: out, Name: name, Key: key})
	}
	return refs, nil
}

// SplicedLen is the length of the body Splice makes of a body of n
// bytes; an error when it passes limit (max_body_bytes, a body's bound)
// or overflows.
func SplicedLen(n int, refs []Ref, limit int) (int, error) {
	total := uint64(n)
	for _, r := range refs {
		if r.Output != "" {
			continue
		}
		total += r.Size
		if total < r.Size || total > uint64(limit) {
			return 0, &Error{Status: 413, Msg: fmt.Sprintf("the inputs in shared memory regions make the request more than max_body_bytes (%d)", limit)}
		}
	}
	return int(total), nil
}

// HasInputs reports whether refs name an input (Splice has work).
func HasInputs(refs []Ref) bool {
	for _, r := range refs {
		if r.Output == "" {
			return true
		}
	}
	return false
}

// Splice is the body the client's request stands for: body (the JSON
// header of headerLen bytes, then the binary bytes sent) with each
// input ref's bytes, read into their place by read, within limit bytes
// in all (output refs are Deliver's). The
// master splices to key a request for the poison quarantine (its
// mapping, Pending.Splice), the prep worker to decode it (its
// descriptor, Reader.Read); each reads from the region once.
func Splice(body []byte, headerLen int, refs []Ref, limit int, read func(Ref, []byte) error) ([]byte, error) {
	if headerLen < 0 || headerLen > len(body) {
		return nil, fmt.Errorf("%s: the body has no binary part", RefsHeader)
	}
	n, err := SplicedLen(len(body), refs, limit)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	copy(out, body[:headerLen])
	sent, bin := body[headerLen:], out[headerLen:]
	at := uint64(0)
	for _, r := range refs {
		if r.Output != "" {
			continue
		}
		if r.Pos < at || r.Pos > uint64(len(bin)) || r.Size > uint64(len(bin))-r.Pos || r.Pos-at > uint64(len(sent)) {
			return nil, fmt.Errorf("%s: input of region %q at %d does not fit the request's %d binary bytes", RefsHeader, r.Name, r.Pos, len(bin))
		}
		gap := r.Pos - at
		copy(bin[at:], sent[:gap])
		sent = sent[gap:]
		if err := read(r, bin[r.Pos:r.Pos+r.Size]); err != nil {
			return nil, err
		}
		at = r.Pos + r.Size
	}
	copy(bin[at:], sent)
	return out, nil
}
