package affinity

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MemMode is a NUMA memory policy mode, as set_mempolicy(2) names them.
type MemMode string

// The memory policies a worker can be started with.
const (
	// MemDefault leaves memory placement to the kernel: local to the CPU
	// that first touches a page. The zero value.
	MemDefault MemMode = ""
	// MemPreferred allocates on the node first and falls back to others
	// when it is full (MPOL_PREFERRED).
	MemPreferred MemMode = "preferred"
	// MemBind allocates only on the node (MPOL_BIND): a worker that
	// outgrows it is OOM-killed rather than slowed down by remote memory.
	MemBind MemMode = "bind"
)

// MemPolicy is where a worker's memory comes from. The zero value is the
// kernel's default policy.
type MemPolicy struct {
	Mode MemMode
	// Node is the NUMA node; ignored for MemDefault.
	Node int
}

// Policy modes of <linux/mempolicy.h>.
const (
	mpolDefault   = 0
	mpolPreferred = 1
	mpolBind      = 2
)

// nodeMaskWords bounds the node mask: 1024 nodes, the kernel's largest
// MAX_NUMNODES.
const nodeMaskWords = 16

// threadMemPolicy is one thread's policy as get_mempolicy(2) reports it.
type threadMemPolicy struct {
	mode int
	mask [nodeMaskWords]uint64
}

// kernelMode maps a MemMode to set_mempolicy's mode.
func (m MemPolicy) kernelMode() (int, error) {
	switch m.Mode {
	case MemDefault:
		return mpolDefault, nil
	case MemPreferred:
		return mpolPreferred, nil
	case MemBind:
		return mpolBind, nil
	}
	return 0, fmt.Errorf("unknown memory policy %q (want %q or %q)", m.Mode, MemPreferred, MemBind)
}

// threadPolicy returns the policy to set on the forking thread.
func (m MemPolicy) threadPolicy() (threadMemPolicy, error) {
	mode, err := m.kernelMode()
	if err != nil {
		return threadMemPolicy{}, err
	}
	p := threadMemPolicy{mode: mode}
	if mode != mpolDefault {
		if m.Node < 0 || m.Node >= nodeMaskWords*64 {
			return threadMemPolicy{}, fmt.Errorf("NUMA node %d is out of range for a %s memory policy", m.Node, m.Mode)
		}
		p.mask[m.Node/64] |= 1 << (m.Node % 64)
	}
	return p, nil
}

// getThreadMemPolicy reads the calling thread's policy (get_mempolicy(2)).
func getThreadMemPolicy() (threadMemPolicy, error) {
	var p threadMemPolicy
	var mode int32
	_, _, errno := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)),
		uintptr(unsafe.Pointer(&p.mask[0])), nodeMaskWords*64, 0, 0, 0)
	if errno != 0 {
		return threadMemPolicy{}, fmt.Errorf("could not read the forking thread's memory policy: %w", errno)
	}
	// The mode may carry MPOL_F_* flags in its high bits; keep the mode.
	p.mode = int(mode) & 0xff
	return p, nil
}

// setThreadMemPolicy sets the calling thread's policy (set_mempolicy(2));
// children forked by the thread inherit it.
func setThreadMemPolicy(p threadMemPolicy) error {
	var mask, maxNode uintptr
	if p.mode != mpolDefault {
		// maxnode counts one more than the bits the kernel reads.
		mask, maxNode = uintptr(unsafe.Pointer(&p.mask[0])), nodeMaskWords*64+1
	}
	_, _, errno := unix.Syscall(unix.SYS_SET_MEMPOLICY, uintptr(p.mode), mask, maxNode)
	if errno != 0 {
		return errno
	}
	return nil
}
