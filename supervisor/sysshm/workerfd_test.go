package sysshm

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// workerReader is a Reader on a WorkerSocket served by r, as a prep
// worker has one.
func workerReader(t *testing.T, r *Registry) *Reader {
	t.Helper()
	m, w, err := WorkerSocket()
	if err != nil {
		t.Fatal(err)
	}
	go r.ServeWorker(m)
	fd, err := unix.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.c.Close() })
	return rd
}

// inlineRefs is Inline of a request with input x (64 bytes) in region
// in at off, and what the prep worker makes of it with rd.
func inlineRefs(t *testing.T, r *Registry, rd *Reader, off int) (sent []byte, p *Pending, spliced []byte, err error) {
	t.Helper()
	header := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"shared_memory_region":"in","shared_memory_byte_size":64,"shared_memory_offset":` + strconv.Itoa(off) + `}}]}`
	out, n, p, err := r.Inline("", []byte(header), -1, 1<<20)
	if err != nil {
		t.Fatalf("Inline: %v", err)
	}
	refs, perr := ParseRefs(FormatRefs(p.Refs()))
	if perr != nil {
		t.Fatal(perr)
	}
	spliced, err = Splice(out, n, refs, 1<<20, rd.Read)
	return out[n:], p, spliced, err
}

// TestWorkerReadsInputsItself: the master's Inline sends no input bytes,
// only a reference; the worker reads them with the master's descriptor,
// and a region truncated, unlinked or unregistered under it is a 400,
// never a fault, and a name replaced after registration is never read.
func TestWorkerReadsInputsItself(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4)
	path := object(t, dir, "in", append(make([]byte, 100), data...))
	if err := r.Register("", "in", "/in", 100, 64, lim); err != nil {
		t.Fatal(err)
	}
	rd := workerReader(t, r)

	sent, p, spliced, err := inlineRefs(t, r, rd, 0)
	if err != nil {
		t.Fatalf("worker read: %v", err)
	}
	if len(sent) != 0 {
		t.Errorf("the master sent %d bytes of the region; want a reference only", len(sent))
	}
	if !bytes.HasSuffix(spliced, data) {
		t.Errorf("spliced %q; want it to end with the region's bytes", spliced)
	}
	// The quarantine's splice, from the master's mapping, is the same body.
	if m, err := p.Splice(spliced[:len(spliced)-64], len(spliced)-64, 1<<20); err != nil || !bytes.Equal(m, spliced) {
		t.Errorf("the master's splice %q (%v) differs from the worker's %q", m, err, spliced)
	}
	p.Release()

	if err := os.Truncate(path, 120); err != nil {
		t.Fatal(err)
	}
	_, p, _, err = inlineRefs(t, r, rd, 0)
	wantStatus(t, err, 400, "holds 120 bytes")
	p.Release()

	// A name replaced after registration: the worker holds the
	// registered object, now unlinked, and never reads the new one.
	os.Remove(path)
	object(t, dir, "in", append(make([]byte, 100), data...))
	_, p, _, err = inlineRefs(t, r, rd, 0)
	wantStatus(t, err, 400, "was unlinked")
	p.Release()

	// A worker asking for a region unregistered since gets a 400.
	rd2 := workerReader(t, r)
	header := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"shared_memory_region":"in","shared_memory_byte_size":64}}]}`
	out, n, p, err := r.Inline("", []byte(header), -1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	r.Unregister("", "in")
	_, err = Splice(out, n, p.Refs(), 1<<20, rd2.Read)
	wantStatus(t, err, 400, "unregistered")
	p.Release()
	if held := len(rd.held) + len(rd2.held); held > 1 {
		t.Errorf("the workers hold %d descriptors; the unlinked one was to be let go", held)
	}
}

// TestSpliceKeepsTheSentBytesInPlace: inputs sent as binary data and
// inputs in regions interleave in the order of the inputs.
func TestSpliceKeepsTheSentBytesInPlace(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	object(t, dir, "in", []byte("RRRR"))
	if err := r.Register("", "in", "/in", 0, 4, lim); err != nil {
		t.Fatal(err)
	}
	header := `{"inputs":[{"name":"a","parameters":{"binary_data_size":2}},{"name":"b","parameters":{"shared_memory_region":"in","shared_memory_byte_size":4}},{"name":"c","parameters":{"binary_data_size":3}}]}`
	body := append([]byte(header), "aacc"+"c"...)
	out, n, p, err := r.Inline("", body, len(header), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if string(out[n:]) != "aaccc" {
		t.Errorf("sent %q; want the client's bytes only", out[n:])
	}
	got, err := p.Splice(out, n, 1<<20)
	if err != nil || string(got[n:]) != "aaRRRRccc" {
		t.Errorf("spliced %q (%v); want aaRRRRccc", got[n:], err)
	}
	if _, err := SplicedLen(len(out), p.Refs(), len(out)+3); StatusOf(err) != 413 {
		t.Errorf("spliced past the limit: %v; want 413", err)
	}
}

// TestWorkerWritesOutputsItself: an output in a region is named by a
// Ref, and the worker writes it there (Deliver with Reader.Write): the
// answer names the region and carries no bytes; an output larger than
// its room, or a region truncated under the worker, is a 400.
func TestWorkerWritesOutputsItself(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	path := object(t, dir, "out", make([]byte, 32))
	if err := r.Register("", "out", "/out", 8, 24, lim); err != nil {
		t.Fatal(err)
	}
	rd := workerReader(t, r)
	header := `{"inputs":[],"outputs":[{"name":"y","parameters":{"shared_memory_region":"out","shared_memory_byte_size":16,"shared_memory_offset":4}}]}`
	out, n, p, err := r.Inline("", []byte(header), -1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if len(out) != n || !bytes.Contains(out, []byte(`"binary_data":true`)) {
		t.Fatalf("Inline sent %s; want y asked as binary data, no bytes", out)
	}
	refs, err := ParseRefs(FormatRefs(p.Refs()))
	if err != nil || len(refs) != 1 || refs[0].Output != "y" || refs[0].Off != 12 || refs[0].Echo != 4 {
		t.Fatalf("refs %+v (%v)", refs, err)
	}
	answer := func(y string) ([]byte, int) {
		h := `{"model_name":"m","outputs":[{"name":"y","datatype":"UINT8","shape":[` + strconv.Itoa(len(y)) + `],"parameters":{"binary_data_size":` + strconv.Itoa(len(y)) + `}}]}`
		return []byte(h + y), len(h)
	}
	body, hl := answer("0123456789abcdef")
	got, m, err := Deliver(body, hl, refs, rd.Write)
	if err != nil {
		t.Fatal(err)
	}
	if m != len(got) || !bytes.Contains(got, []byte(`"shared_memory_region":"out"`)) || !bytes.Contains(got, []byte(`"shared_memory_offset":4`)) {
		t.Errorf("answer %s; want y naming region out at offset 4, no bytes", got)
	}
	if b, _ := os.ReadFile(path); string(b[12:28]) != "0123456789abcdef" {
		t.Errorf("the object holds %q; want y at 12", b)
	}
	body, hl = answer("0123456789abcdefg")
	_, _, err = Deliver(body, hl, refs, rd.Write)
	wantStatus(t, err, 400, "more than the 16")
	if err := os.Truncate(path, 20); err != nil {
		t.Fatal(err)
	}
	body, hl = answer("0123456789abcdef")
	_, _, err = Deliver(body, hl, refs, rd.Write)
	wantStatus(t, err, 400, "holds 20 bytes")
}
