package sysshm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Dir is where the objects regions are registered on live: POSIX shared
// memory (shm_open) is files in /dev/shm on Linux.
const Dir = "/dev/shm"

// Limits bound what one API key may hold (limits.shared_memory_regions,
// limits.shared_memory_bytes).
type Limits struct {
	Regions int   // regions registered at once
	Bytes   int64 // bytes of them mapped at once
}

// Error is a refusal a client can act on: Status is the HTTP status
// (400, or 404 for a region that is not registered).
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

func badRequest(format string, args ...any) error {
	return &Error{Status: 400, Msg: fmt.Sprintf(format, args...)}
}

// ErrGone marks a region whose object was unlinked or truncated under
// the server (errors.Is); its Error is the 400 the client gets.
var ErrGone = errors.New("the region's shared memory object changed under the server")

// Registry holds the registered regions, by owner (Owner) and name.
type Registry struct {
	dirPath string
	mu      sync.Mutex
	owners  map[string]*holdings
	// byID finds a region for a worker that asks for its descriptor
	// (ServeWorker); ids are never reused, so a stale one finds nothing.
	byID   map[uint64]*Region
	lastID uint64
}

// holdings are one owner's regions and what they map.
type holdings struct {
	regions map[string]*Region
	bytes   int64
}

// New returns an empty registry for the objects in Dir.
func New() *Registry { return newIn(Dir) }

// newIn is New for the objects in dir (tests).
func newIn(dir string) *Registry {
	return &Registry{dirPath: dir, owners: map[string]*holdings{}, byID: map[uint64]*Region{}}
}

// Info is what status says of a region.
type Info struct {
	Name     string
	Key      string
	Offset   uint64
	ByteSize uint64
}

// Region is one registered region: ByteSize bytes of the object Key from
// Offset, mapped once.
type Region struct {
	Info

	// id names the region to the workers (Ref, ServeWorker); dev and ino
	// are its object's, which a worker checks the descriptor it holds
	// against.
	id       uint64
	dev, ino uint64

	f    *os.File
	mem  []byte // the mapping, from the page that holds Offset
	base int    // Offset's place in mem

	mu     sync.Mutex
	users  int  // copies using mem
	closed bool // unregistered: unmapped when users is 0
}

// ownPrefix starts the name of every object the server itself keeps in
// /dev/shm: the scoreboards (shm.PathFor) and the response cache's
// segments (respcache.PathFor). A client may register none of them: an
// output written into the response cache would be answered to other
// keys, one into a scoreboard would blame crashes on the wrong requests.
const ownPrefix = "supervisor-"

// objectName is key as the name of an object directly in dir: shm_open's
// "/name" (or "name"), with no other '/' and not "." or "..".
func objectName(key string) (string, error) {
	name := strings.TrimPrefix(key, "/")
	switch {
	case name == "" || name == "." || name == "..":
		return "", badRequest("shared memory key %q names no object: use the name shm_open was given, such as \"/input0\"", key)
	case strings.ContainsAny(name, "/\x00"):
		return "", badRequest("shared memory key %q is not the name of an object in %s: it may hold no '/' past the first character", key, Dir)
	case len(name) > 255:
		return "", badRequest("shared memory key is %d bytes long; a /dev/shm name is at most 255", len(name))
	case strings.HasPrefix(name, ownPrefix):
		return "", badRequest("shared memory key %q names one of the server's own objects (%s*); name yours otherwise", key, ownPrefix)
	}
	return name, nil
}

// Register opens key's object in Dir (without following a link), checks
// that it is a regular file holding offset+byteSize bytes, maps that
// part and registers it as name for owner, within lim.
func (r *Registry) Register(owner, name, key string, offset, byteSize uint64, lim Limits) error {
	if name == "" {
		return badRequest("a shared memory region needs a name")
	}
	if byteSize == 0 {
		return badRequest("shared memory region %q: byte_size is 0; register the bytes the tensors take", name)
	}
	end := offset + byteSize
	if end < offset || end > math.MaxInt64 {
		return badRequest("shared memory region %q: offset %d + byte_size %d overflows", name, offset, byteSize)
	}
	obj, err := objectName(key)
	if err != nil {
		return err
	}
	// Cheap refusals before the object is opened.
	r.mu.Lock()
	h := r.owners[owner]
	if h != nil {
		if _, dup := h.regions[name]; dup {
			r.mu.Unlock()
			return badRequest("shared memory region %q is already registered; unregister it first", name)
		}
		if lim.Regions > 0 && len(h.regions) >= lim.Regions {
			r.mu.Unlock()
			return badRequest("this API key already holds %d shared memory regions (limits.shared_memory_regions); unregister one first", len(h.regions))
		}
	}
	r.mu.Unlock()

	reg, err := r.open(name, key, obj, offset, byteSize)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h = r.owners[owner]
	if h == nil {
		h = &holdings{regions: map[string]*Region{}}
		r.owners[owner] = h
	}
	mapped := int64(len(reg.mem))
	switch {
	case h.regions[name] != nil:
		err = badRequest("shared memory region %q is already registered; unregister it first", name)
	case lim.Regions > 0 && len(h.regions) >= lim.Regions:
		err = badRequest("this API key already holds %d shared memory regions (limits.shared_memory_regions); unregister one first", len(h.regions))
	case lim.Bytes > 0 && h.bytes+mapped > lim.Bytes:
		err = badRequest("shared memory region %q would map %d bytes more than the %d this API key holds; limits.shared_memory_bytes is %d", name, mapped, h.bytes, lim.Bytes)
	}
	if err != nil {
		reg.unmap()
		return err
	}
	r.lastID++
	reg.id = r.lastID
	r.byID[reg.id] = reg
	h.regions[name] = reg
	h.bytes += mapped
	return nil
}

// open opens and maps the region; the caller registers it.
func (r *Registry) open(name, key, obj string, offset, byteSize uint64) (*Region, error) {
	dir, err := unix.Open(r.dirPath, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", r.dirPath, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, obj, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return nil, badRequest("shared memory key %q is a symbolic link; register the object itself", key)
		case errors.Is(err, unix.ENOENT):
			return nil, badRequest("shared memory key %q: no such object in %s; create it (shm_open) before registering it", key, r.dirPath)
		default:
			return nil, badRequest("shared memory key %q: %v (the server opens it read-write as its own user)", key, err)
		}
	}
	f := os.NewFile(uintptr(fd), r.dirPath+"/"+obj)
	reg := &Region{Info: Info{Name: name, Key: key, Offset: offset, ByteSize: byteSize}, f: f}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil {
		reg.dev, reg.ino = st.Dev, st.Ino
	}
	if err := reg.check(); err != nil {
		f.Close()
		return nil, err
	}
	page := uint64(os.Getpagesize())
	start := offset &^ (page - 1)
	mem, err := unix.Mmap(fd, int64(start), int(offset+byteSize-start), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, badRequest("shared memory key %q: cannot map %d bytes from offset %d: %v", key, byteSize, offset, err)
	}
	reg.mem, reg.base = mem, int(offset-start)
	return reg, nil
}

// check is the fstat every use starts with: the object is a regular file
// that still has a link and holds Offset+ByteSize bytes.
func (g *Region) check() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(g.f.Fd()), &st); err != nil {
		return fmt.Errorf("shared memory region %q: fstat: %w", g.Name, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return badRequest("shared memory key %q is not a regular file", g.Key)
	case st.Nlink == 0:
		return &Error{Status: 400, Msg: fmt.Sprintf("shared memory region %q: its object %q was unlinked; create it again and register it again", g.Name, g.Key)}
	case uint64(st.Size) < g.Offset+g.ByteSize:
		return &Error{Status: 400, Msg: fmt.Sprintf("shared memory region %q: its object %q holds %d bytes, fewer than offset %d + byte_size %d", g.Name, g.Key, st.Size, g.Offset, g.ByteSize)}
	}
	return nil
}

// unmap releases the mapping and the object; the region is unusable.
func (g *Region) unmap() {
	if g.mem != nil {
		_ = unix.Munmap(g.mem)
		g.mem = nil
	}
	g.f.Close()
}

// Get returns owner's region name for a copy, counted as a user until
// release is called; 400 when there is no such region.
func (r *Registry) Get(owner, name string) (g *Region, release func(), err error) {
	r.mu.Lock()
	if h := r.owners[owner]; h != nil {
		g = h.regions[name]
	}
	r.mu.Unlock()
	if g == nil {
		return nil, nil, badRequest("shared memory region %q is not registered with this API key", name)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, nil, badRequest("shared memory region %q was unregistered", name)
	}
	g.users++
	return g, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.users--
		if g.closed && g.users == 0 {
			g.unmap()
		}
	}, nil
}

// Unregister drops owner's region name, or all of owner's regions when
// name is ""; a region in use is unmapped when its last copy ends. An
// unknown name is no error, as in Triton.
func (r *Registry) Unregister(owner, name string) {
	r.mu.Lock()
	h := r.owners[owner]
	var gone []*Region
	if h != nil {
		for n, g := range h.regions {
			if name == "" || n == name {
				gone = append(gone, g)
				h.bytes -= int64(len(g.mem))
				delete(h.regions, n)
				delete(r.byID, g.id)
			}
		}
		if len(h.regions) == 0 {
			delete(r.owners, owner)
		}
	}
	r.mu.Unlock()
	for _, g := range gone {
		g.mu.Lock()
		g.closed = true
		if g.users == 0 {
			g.unmap()
		}
		g.mu.Unlock()
	}
}

// Status lists owner's regions by name, or only name (404 when it is not
// registered).
func (r *Registry) Status(owner, name string) ([]Info, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Info
	if h := r.owners[owner]; h != nil {
		for n, g := range h.regions {
			if name == "" || n == name {
				out = append(out, g.Info)
			}
		}
	}
	if name != "" && len(out) == 0 {
		return nil, &Error{Status: 404, Msg: fmt.Sprintf("shared memory region %q is not registered with this API key", name)}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Retain unregisters the regions of every owner not in owners: those of
// an API key a reload removed, which no request can use any more.
func (r *Registry) Retain(owners map[string]bool) {
	r.mu.Lock()
	var gone []string
	for o := range r.owners {
		if !owners[o] {
			gone = append(gone, o)
		}
	}
	r.mu.Unlock()
	for _, o := range gone {
		r.Unregister(o, "")
	}
}

// Close unregisters every region of every owner.
func (r *Registry) Close() {
	r.mu.Lock()
	owners := make([]string, 0, len(r.owners))
	for o := range r.owners {
		owners = append(owners, o)
	}
	r.mu.Unlock()
	for _, o := range owners {
		r.Unregister(o, "")
	}
}
