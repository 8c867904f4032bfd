package onnxmodel

import (
	"math"
	"math/rand/v2"
)

// newRand returns the generator every seeded model draws from. PCG with a
// fixed second word makes the weights a pure function of the seed.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed_0f_0a11))
}

// heNormal draws n weights from N(0, 2/fanIn), He initialisation: through a
// stack of ReLU layers activations then keep roughly unit scale, so outputs
// stay finite and far from zero without any training.
func heNormal(r *rand.Rand, n, fanIn int) []float32 {
	std := math.Sqrt(2 / float64(fanIn))
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(r.NormFloat64() * std)
	}
	return w
}

// smallBias draws n biases uniformly from [-0.1, 0.1).
func smallBias(r *rand.Rand, n int) []float32 {
	b := make([]float32, n)
	for i := range b {
		b[i] = float32(r.Float64()*0.2 - 0.1)
	}
	return b
}
