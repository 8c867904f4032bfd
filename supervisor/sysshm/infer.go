package sysshm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The request parameters that name a region (Triton's).
const (
	ParamRegion   = "shared_memory_region"
	ParamByteSize = "shared_memory_byte_size"
	ParamOffset   = "shared_memory_offset"
)

// MaxHeader bounds the JSON header the master reads of a request that
// names regions: parsing JSON is the prep workers' work, and a client
// must not have the master parse a 64 MiB body. A request's other inputs
// go as binary data (or are small).
const MaxHeader = 1 << 20

// HeaderTooLarge is the refusal of a request past MaxHeader.
func HeaderTooLarge(n int) error {
	return badRequest("the JSON of a request that names shared memory regions is %d bytes, more than the %d the server reads for it: send the other inputs as binary data (Inference-Header-Content-Length)", n, MaxHeader)
}

// Mentions reports whether an infer request's JSON header names a
// region: only such a request is rewritten (Inline). The front asks it of
// every infer request, and a JSON request's header is its whole body
// (1.35 MB for the default model's), so it looks only where a quote is
// (bytes.IndexByte skips a body's numbers at memory speed). bytes.Contains
// would give up its first-byte search after the few quotes every header
// opens with and compare at each offset instead: 0.7 ms for that body
// (BenchmarkMentions). Where quotes are dense (BYTES strings) it falls
// back to bytes.Contains, so no header costs much more than that.
func Mentions(header []byte) bool {
	key := []byte(`"` + ParamRegion + `"`)
	quotes := 0
	for i := 0; i < len(header); i++ {
		j := bytes.IndexByte(header[i:], '"')
		if j < 0 {
			return false
		}
		i += j
		if bytes.HasPrefix(header[i:], key) {
			return true
		}
		if quotes++; quotes > 64 && quotes > i/32 {
			return bytes.Contains(header[i+1:], key)
		}
	}
	return false
}

// Pending is an infer request's regions, held in use from Inline until
// Release, and the references to them the prep worker is sent.
type Pending struct {
	releases []func()
	// refs are the inputs and outputs in regions, sent to the prep
	// worker as references (RefsHeader), and regs their regions.
	refs []Ref
	regs []*Region
}

// Refs are the request's inputs and outputs in regions, for RefsHeader
// (none: the request names no region).
func (p *Pending) Refs() []Ref {
	if p == nil {
		return nil
	}
	return p.refs
}

// Splice is the body Inline returned (headerLen bytes of JSON, then the
// binary bytes sent) with the inputs' bytes read from the master's own
// mapping of their regions, each under ReadAt's checks: the request as
// the prep worker decodes it, for the poison quarantine's key, which
// must see the tensor bytes (a poison body is refused whether its bytes
// come inline or from a region). Only a quarantine that keys the request
// pays this copy.
func (p *Pending) Splice(body []byte, headerLen, limit int) ([]byte, error) {
	return Splice(body, headerLen, p.refs, limit, func(r Ref, dst []byte) error {
		for i := range p.refs {
			if p.refs[i].Output == "" && p.refs[i].Pos == r.Pos {
				g := p.regs[i]
				return g.ReadAt(dst, r.Off-g.Offset)
			}
		}
		return fmt.Errorf("%s: no region at %d", RefsHeader, r.Pos)
	})
}

// Release lets the regions go (an unregistered one is unmapped now).
func (p *Pending) Release() {
	if p == nil {
		return
	}
	for _, f := range p.releases {
		f()
	}
	p.releases = nil
}

// ref names a region and the bytes of it a tensor takes.
type ref struct {
	region         string
	offset, size   uint64
	offsetExplicit bool
}

// regionRef reads a tensor's region parameters; ok is false when it
// names none.
func regionRef(tensor string, params map[string]json.RawMessage) (r ref, ok bool, err error) {
	raw, ok := params[ParamRegion]
	if !ok {
		for _, k := range []string{ParamByteSize, ParamOffset} {
			if _, has := params[k]; has {
				return r, false, badRequest("tensor %q has %s but no %s", tensor, k, ParamRegion)
			}
		}
		return r, false, nil
	}
	if err := json.Unmarshal(raw, &r.region); err != nil || r.region == "" {
		return r, false, badRequest("tensor %q: %s must be a region's name (a non-empty string)", tensor, ParamRegion)
	}
	size, has := params[ParamByteSize]
	if !has {
		return r, false, badRequest("tensor %q names region %q but no %s", tensor, r.region, ParamByteSize)
	}
	if err := json.Unmarshal(size, &r.size); err != nil {
		return r, false, badRequest("tensor %q: %s must be a non-negative integer", tensor, ParamByteSize)
	}
	if off, has := params[ParamOffset]; has {
		if err := json.Unmarshal(off, &r.offset); err != nil {
			return r, false, badRequest("tensor %q: %s must be a non-negative integer", tensor, ParamOffset)
		}
		r.offsetExplicit = true
	}
	return r, true, nil
}

// tensorJSON is an input or output entry, every field kept as sent.
type tensorJSON = map[string]json.RawMessage

func nameOf(t tensorJSON) string {
	var s string
	_ = json.Unmarshal(t["name"], &s)
	return s
}

func paramsOf(t tensorJSON) (map[string]json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if raw, ok := t["parameters"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, badRequest("tensor %q: parameters must be an object", nameOf(t))
		}
	}
	return p, nil
}

func setParams(t tensorJSON, p map[string]json.RawMessage) {
	b, _ := json.Marshal(p)
	t["parameters"] = b
}

// Inline rewrites an infer request whose header names regions (Mentions)
// into the binary-extension request the prep worker decodes: each input
// in a region gets binary_data_size, and its bytes are left out of the
// body and named by a Ref instead (p.Refs, sent as RefsHeader: the prep
// worker reads them from the region itself) once the region is checked
// to be owner's and the bytes to lie inside it (the object itself is
// checked by the worker, as it reads); each output in a region is asked
// for as binary data, and named by a Ref too, for the prep worker to
// write (Deliver). out is the new JSON
// header and the binary bytes the client sent; the request stands for
// SplicedLen(len(out), p.Refs()) bytes. The caller calls p.Release once
// the answer is in, whatever happened. headerLen is the JSON header's length in body
// (the Inference-Header-Content-Length), or -1 when body is all JSON. The
// caller calls p.Release once Deliver is done, whatever happened. The
// request's binary bytes, its regions' included, are at most limit
// (max_body_bytes: what a body may carry).
func (r *Registry) Inline(owner string, body []byte, headerLen, limit int) (out []byte, outHeaderLen int, p *Pending, err error) {
	p = &Pending{}
	defer func() {
		if err != nil {
			p.Release()
			p = nil
		}
	}()
	header, binary := body, []byte(nil)
	if headerLen >= 0 {
		if headerLen > len(body) {
			return nil, 0, p, badRequest("Inference-Header-Content-Length %d is past the body's %d bytes", headerLen, len(body))
		}
		header, binary = body[:headerLen], body[headerLen:]
	}
	if len(header) > MaxHeader {
		return nil, 0, p, HeaderTooLarge(len(header))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(header, &top); err != nil {
		return nil, 0, p, badRequest("the infer request's JSON header is not an object: %v", err)
	}
	var inputs, outputs []tensorJSON
	if err := json.Unmarshal(top["inputs"], &inputs); err != nil {
		return nil, 0, p, badRequest("the infer request's inputs must be a list of objects")
	}
	if raw, ok := top["outputs"]; ok {
		if err := json.Unmarshal(raw, &outputs); err != nil {
			return nil, 0, p, badRequest("the infer request's outputs must be a list of objects")
		}
	}

	// Each input's bytes in the new binary section: a region's, or its
	// own binary part as sent.
	var sent [][]byte // the binary bytes the client sent, in order
	total := 0        // the binary part's bytes, the regions' included
	for _, in := range inputs {
		name := nameOf(in)
		params, err := paramsOf(in)
		if err != nil {
			return nil, 0, p, err
		}
		ref, ok, err := regionRef(name, params)
		if err != nil {
			return nil, 0, p, err
		}
		if !ok {
			if raw, has := params["binary_data_size"]; has {
				n, err := strconv.ParseUint(string(raw), 10, 63)
				if err != nil || n > uint64(len(binary)) {
					return nil, 0, p, badRequest("input %q: binary_data_size %s does not fit the %d bytes left of the body", name, raw, len(binary))
				}
				sent = append(sent, binary[:n])
				binary = binary[n:]
				total += int(n)
			}
			continue
		}
		if _, has := in["data"]; has {
			return nil, 0, p, badRequest("input %q names region %q and has data; send it one way", name, ref.region)
		}
		if _, has := params["binary_data_size"]; has {
			return nil, 0, p, badRequest("input %q names region %q and has binary_data_size; send it one way", name, ref.region)
		}
		g, release, err := r.Get(owner, ref.region)
		if err != nil {
			return nil, 0, p, err
		}
		p.releases = append(p.releases, release)
		if ref.offset > g.ByteSize || ref.size > g.ByteSize-ref.offset {
			return nil, 0, p, badRequest("input %q: %d bytes from offset %d do not fit region %q's %d bytes", name, ref.size, ref.offset, ref.region, g.ByteSize)
		}
		if ref.size > uint64(max(limit-total, 0)) {
			return nil, 0, p, &Error{Status: 413, Msg: fmt.Sprintf("input %q: %d bytes from region %q make the request's tensors more than max_body_bytes (%d)", name, ref.size, ref.region, limit)}
		}
		delete(params, ParamRegion)
		delete(params, ParamByteSize)
		delete(params, ParamOffset)
		params["binary_data_size"] = json.RawMessage(strconv.FormatUint(ref.size, 10))
		setParams(in, params)
		p.refs = append(p.refs, Ref{Pos: uint64(total), ID: g.id, Dev: g.dev, Ino: g.ino,
			Off: g.Offset + ref.offset, Size: ref.size, Echo: -1, Name: g.Name, Key: g.Key})
		p.regs = append(p.regs, g)
		total += int(ref.size)
	}
	if len(binary) > 0 {
		return nil, 0, p, badRequest("the body has %d bytes past its inputs' binary_data_size", len(binary))
	}
	for _, o := range outputs {
		name := nameOf(o)
		params, err := paramsOf(o)
		if err != nil {
			return nil, 0, p, err
		}
		ref, ok, err := regionRef(name, params)
		if err != nil || !ok {
			if err != nil {
				return nil, 0, p, err
			}
			continue
		}
		if name == "" {
			return nil, 0, p, badRequest("an output in region %q has no name", ref.region)
		}
		for _, r := range p.refs {
			if r.Output == name {
				return nil, 0, p, badRequest("output %q is asked for twice", name)
			}
		}
		g, release, err := r.Get(owner, ref.region)
		if err != nil {
			return nil, 0, p, err
		}
		p.releases = append(p.releases, release)
		if ref.offset > g.ByteSize || ref.size > g.ByteSize-ref.offset {
			return nil, 0, p, badRequest("output %q: %d bytes from offset %d do not fit region %q's %d bytes", name, ref.size, ref.offset, ref.region, g.ByteSize)
		}
		echo := int64(-1)
		if ref.offsetExplicit {
			echo = int64(ref.offset)
		}
		p.refs = append(p.refs, Ref{ID: g.id, Dev: g.dev, Ino: g.ino, Off: g.Offset + ref.offset, Size: ref.size,
			Output: name, Echo: echo, Name: g.Name, Key: g.Key})
		p.regs = append(p.regs, g)
		delete(params, ParamRegion)
		delete(params, ParamByteSize)
		delete(params, ParamOffset)
		params["binary_data"] = json.RawMessage("true")
		setParams(o, params)
	}
	top["inputs"], _ = json.Marshal(inputs)
	if outputs != nil {
		top["outputs"], _ = json.Marshal(outputs)
	}
	newHeader, _ := json.Marshal(top)
	out = newHeader
	for _, b := range sent {
		out = append(out, b...)
	}
	return out, len(newHeader), p, nil
}

// Deliver writes the outputs refs name (Output) from a 200 answer (its
// JSON header of headerLen bytes, then binary outputs) into their
// regions with write, and returns the answer with those outputs' entries
// carrying their region (shared_memory_region, shared_memory_byte_size:
// the bytes written, and shared_memory_offset when the request had one)
// instead of data. An output larger than its region's room is refused
// 400. The prep worker delivers, with its descriptors (Reader.Write).
func Deliver(body []byte, headerLen int, refs []Ref, write func(Ref, []byte) error) (out []byte, outHeaderLen int, err error) {
	outs := map[string]Ref{}
	for _, r := range refs {
		if r.Output != "" {
			outs[r.Output] = r
		}
	}
	if len(outs) == 0 {
		return body, headerLen, nil
	}
	if headerLen < 0 || headerLen > len(body) {
		return nil, 0, fmt.Errorf("the infer answer has no binary outputs for its shared memory outputs")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body[:headerLen], &top); err != nil {
		return nil, 0, fmt.Errorf("the infer answer's header is not JSON: %w", err)
	}
	var outputs []tensorJSON
	if err := json.Unmarshal(top["outputs"], &outputs); err != nil {
		return nil, 0, fmt.Errorf("the infer answer's outputs are not a list: %w", err)
	}
	binary := body[headerLen:]
	kept := make([][]byte, 0, len(outputs))
	keptLen := 0
	for _, o := range outputs {
		name := nameOf(o)
		params, err := paramsOf(o)
		if err != nil {
			return nil, 0, err
		}
		raw, has := params["binary_data_size"]
		if !has {
			continue
		}
		n, err := strconv.ParseUint(string(raw), 10, 63)
		if err != nil || n > uint64(len(binary)) {
			return nil, 0, fmt.Errorf("the infer answer's output %q: binary_data_size %s does not fit", name, raw)
		}
		data := binary[:n]
		binary = binary[n:]
		po, ok := outs[name]
		if !ok {
			kept = append(kept, data)
			keptLen += len(data)
			continue
		}
		if n > po.Size {
			return nil, 0, badRequest("output %q is %d bytes, more than the %d its shared_memory_byte_size gives it in region %q", name, n, po.Size, po.Name)
		}
		if err := write(po, data); err != nil {
			return nil, 0, err
		}
		delete(params, "binary_data_size")
		params[ParamRegion], _ = json.Marshal(po.Name)
		params[ParamByteSize] = json.RawMessage(strconv.FormatUint(n, 10))
		if po.Echo >= 0 {
			params[ParamOffset] = json.RawMessage(strconv.FormatInt(po.Echo, 10))
		}
		setParams(o, params)
	}
	top["outputs"], _ = json.Marshal(outputs)
	newHeader, _ := json.Marshal(top)
	out = make([]byte, 0, len(newHeader)+keptLen)
	out = append(out, newHeader...)
	for _, d := range kept {
		out = append(out, d...)
	}
	return out, len(newHeader), nil
}
