package classify

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// ReadLabels reads a labels file: one label per line, in class order, as
// Triton's label_filename. Line endings (\n or \r\n) and one final empty
// line are dropped; a line is otherwise taken whole ("n01440764 tench,
// Tinca tinca" stays so).
func ReadLabels(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the labels file: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil, fmt.Errorf("labels file %q is empty (want one label per line, in class order)", path)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, nil
}
