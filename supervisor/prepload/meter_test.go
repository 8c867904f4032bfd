package prepload

import (
	"testing"

	"github.com/supervisor-dev/supervisor/affinity"
)

func TestPoolCPUs(t *testing.T) {
	cpus := func(list string) affinity.CPUSet {
		s, err := affinity.ParseCPUList(list)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	own := []affinity.Assignment{{CPUs: cpus("2")}, {CPUs: cpus("3")}, {CPUs: cpus("4-5")}}
	// Overcommitted: the second and third float over the same CPUs.
	shared := []affinity.Assignment{{CPUs: cpus("1")}, {CPUs: cpus("0-1")}, {CPUs: cpus("0-1")}}
	for _, tt := range []struct {
		name string
		as   []affinity.Assignment
		n    int
		want float64
	}{
		{"own cores, all", own, 3, 4},
		{"own cores, one fewer", own, 2, 2},
		{"none", own, 0, 0},
		{"more than planned", own, 5, 4},
		{"shared CPUs count once", shared, 3, 2},
		{"shared, one", shared, 1, 1},
	} {
		if have := poolCPUs(tt.as, tt.n); have != tt.want {
			t.Errorf("%s: poolCPUs(n=%d) = %g, want %g", tt.name, tt.n, have, tt.want)
		}
	}
}
