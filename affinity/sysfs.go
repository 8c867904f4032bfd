package affinity

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// DefaultSysRoot is where sysfs is mounted; functions taking a sysRoot
// use it when given "".
const DefaultSysRoot = "/sys"

// errFileFormat is wrapped when a sysfs file holds something unexpected.
var errFileFormat = errors.New("unexpected content")

func sysRootOr(root string) string {
	if root == "" {
		return DefaultSysRoot
	}
	return root
}

// readCPUList reads a sysfs file in CPU list format, such as
// devices/system/cpu/online.
func readCPUList(path string) (CPUSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return CPUSet{}, fmt.Errorf("could not read %q: %w", path, err)
	}
	defer f.Close()
	set, err := parseCPUListFile(f)
	if err != nil {
		return CPUSet{}, fmt.Errorf("could not parse %q: %w", path, err)
	}
	return set, nil
}

// parseCPUListFile parses one CPU list line; sysfs ends it with a newline.
func parseCPUListFile(r io.Reader) (CPUSet, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return CPUSet{}, err
	}
	return ParseCPUList(strings.TrimSpace(string(b)))
}

// readInt reads a sysfs file holding one decimal integer, such as
// devices/system/cpu/cpu0/topology/core_id.
func readInt(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("could not read %q: %w", path, err)
	}
	defer f.Close()
	n, err := parseIntFile(f)
	if err != nil {
		return 0, fmt.Errorf("could not parse %q: %w", path, err)
	}
	return n, nil
}

func parseIntFile(r io.Reader) (int, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64))
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", errFileFormat, s)
	}
	return n, nil
}
