package sysshm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Prefix is the path prefix of the extension's HTTP routes.
const Prefix = "/v2/systemsharedmemory"

// The operations of the routes under Prefix.
const (
	OpStatus     = "status"
	OpRegister   = "register"
	OpUnregister = "unregister"
)

// Routes are the extension's HTTP routes, as a refusal of a path that is
// none of them says.
const Routes = "GET " + Prefix + "[/region/{name}]/status, POST " + Prefix + "/region/{name}/register, POST " + Prefix + "[/region/{name}]/unregister"

// MaxBody bounds a register request's body: a key and two numbers.
const MaxBody = 4 << 10

// ParseRoute splits a path under Prefix into its operation, the region's
// name ("" = every region of the caller) and the method it takes; ok is
// false for a path that is no route.
func ParseRoute(path string) (op, name, method string, ok bool) {
	rest, found := strings.CutPrefix(path, Prefix+"/")
	if !found {
		return "", "", "", false
	}
	if r, isRegion := strings.CutPrefix(rest, "region/"); isRegion {
		i := strings.LastIndexByte(r, '/')
		if i <= 0 {
			return "", "", "", false
		}
		name, op = r[:i], r[i+1:]
		if strings.IndexByte(name, '/') >= 0 {
			return "", "", "", false
		}
	} else {
		op = rest
		if op == OpRegister {
			return "", "", "", false // a region is registered by name
		}
	}
	switch op {
	case OpStatus:
		return op, name, "GET", true
	case OpRegister, OpUnregister:
		return op, name, "POST", true
	}
	return "", "", "", false
}

// registerBody is a register request's body, as Triton's HTTP API has it.
type registerBody struct {
	Key      *string `json:"key"`
	Offset   uint64  `json:"offset"`
	ByteSize *uint64 `json:"byte_size"`
}

// Serve answers op (ParseRoute) on name for owner: the status and the
// JSON body (a V2 error for a refusal; the status list for status; empty
// for the others).
func (r *Registry) Serve(owner, op, name string, body []byte, lim Limits) (status int, answer []byte) {
	switch op {
	case OpStatus:
		regions, err := r.Status(owner, name)
		if err != nil {
			return refusal(err)
		}
		type entry struct {
			Name     string `json:"name"`
			Key      string `json:"key"`
			Offset   uint64 `json:"offset"`
			ByteSize uint64 `json:"byte_size"`
		}
		list := make([]entry, len(regions))
		for i, g := range regions {
			list[i] = entry(g)
		}
		b, _ := json.Marshal(list)
		return 200, b
	case OpUnregister:
		r.Unregister(owner, name)
		return 200, nil
	case OpRegister:
		var rb registerBody
		d := json.NewDecoder(bytes.NewReader(body))
		d.DisallowUnknownFields()
		if err := d.Decode(&rb); err != nil {
			return refusal(badRequest("the register request's body is not {\"key\":\"/name\",\"offset\":0,\"byte_size\":N}: %v", err))
		}
		if rb.Key == nil || rb.ByteSize == nil {
			return refusal(badRequest("the register request's body needs \"key\" and \"byte_size\" (and may have \"offset\")"))
		}
		if err := r.Register(owner, name, *rb.Key, rb.Offset, *rb.ByteSize, lim); err != nil {
			return refusal(err)
		}
		return 200, nil
	}
	return refusal(&Error{Status: 404, Msg: "no route: " + Routes})
}

// refusal is err's status and V2 error body: an *Error's status, 500 for
// anything else (an fstat that failed).
func refusal(err error) (int, []byte) {
	status := StatusOf(err)
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return status, b
}

// StatusOf is the HTTP status err answers: an *Error's status, else 500.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 500
}
