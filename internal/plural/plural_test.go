package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 GPUs"}, {1, "1 GPU"}, {2, "2 GPUs"}, {-1, "-1 GPUs"}} {
		if got := Count(c.n, "GPU"); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, "GPU", got, c.want)
		}
	}
}
