package classify

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Classifier ranks the classes of one model output. The zero value ranks
// raw scores without labels.
type Classifier struct {
	// Labels name the classes by index; nil or a shorter list leaves the
	// rest unlabelled ("score:index").
	Labels []string
	// Softmax applies softmax to each batch item's scores before ranking,
	// for models that output logits. The ranking is the same; the scores
	// become probabilities.
	Softmax bool
}

// Classify returns the top k classes of each batch item of t as a BYTES
// tensor named like t. k larger than the number of classes is clipped to it.
func (c *Classifier) Classify(t *tensor.Tensor, k int) (tensor.Tensor, error) {
	scores, err := t.Float64s()
	if err != nil {
		return tensor.Tensor{}, err
	}
	batch, shape := int64(1), []int64(nil)
	if len(t.Shape) >= 2 {
		batch = t.Shape[0]
	}
	if k < 1 {
		return tensor.Tensor{}, fmt.Errorf("classify %q: asked for %d classes; ask for at least 1", t.Name, k)
	}
	if batch == 0 || len(scores) == 0 {
		return tensor.Tensor{Name: t.Name, DType: tensor.Bytes, Shape: []int64{batch, 0}}, nil
	}
	classes := len(scores) / int(batch)
	k = min(k, classes)
	if len(t.Shape) >= 2 {
		shape = []int64{batch, int64(k)}
	} else {
		shape = []int64{int64(k)}
	}
	out := tensor.Tensor{Name: t.Name, DType: tensor.Bytes, Shape: shape}
	idx := make([]int, classes)
	var buf []byte
	for b := range int(batch) {
		row := scores[b*classes : (b+1)*classes]
		if c.Softmax {
			softmax(row)
		}
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(i, j int) int { return compareDesc(row[i], row[j]) })
		for _, i := range idx[:k] {
			buf = c.appendClass(buf[:0], row[i], i)
			out.Data = tensor.AppendBytesElement(out.Data, buf)
		}
	}
	return out, nil
}

// compareDesc orders higher scores first and NaN last.
func compareDesc(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	case math.IsNaN(b):
		return -1
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// appendClass writes "score:index[:label]".
func (c *Classifier) appendClass(dst []byte, score float64, i int) []byte {
	dst = strconv.AppendFloat(dst, score, 'f', 6, 64)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, int64(i), 10)
	if i < len(c.Labels) {
		dst = append(dst, ':')
		dst = append(dst, c.Labels[i]...)
	}
	return dst
}

// softmax replaces v with exp(v)/sum(exp(v)), computed from the maximum
// down so that large logits do not overflow.
func softmax(v []float64) {
	hi := math.Inf(-1)
	for _, x := range v {
		if x > hi {
			hi = x
		}
	}
	sum := 0.0
	for i, x := range v {
		v[i] = math.Exp(x - hi)
		sum += v[i]
	}
	for i := range v {
		v[i] /= sum
	}
}
