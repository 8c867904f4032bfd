// Package plural writes a count with its noun for operators' messages:
// "1 GPU", "2 GPUs". Every line that prints a count of things goes through
// it, so that none says "1 GPUs".
package plural

import "strconv"

// Count is n followed by noun, with an "s" unless n is 1. It suits nouns
// whose plural is a plain "s" (GPU, core, NUMA node, sample).
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
