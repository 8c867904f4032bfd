// Package classify is the classification postprocessing of the prep stage:
// it turns a classifier's score tensor into Triton's classification
// extension output, the top K classes of each batch item as BYTES strings
// "score:index" or "score:index:label".
//
// It follows Triton's semantics so that existing clients
// (tritonclient's InferRequestedOutput(name, class_count=K)) read the
// result unchanged: the output keeps its name, becomes BYTES of shape
// [batch, K] (or [K] for an output without a batch dimension), every
// element after the first dimension counts as a class, classes are ranked
// by score (ties: lower index first) and the score is printed with six
// decimals, as C++'s std::to_string does. Two additions, both opt-in per
// model: Softmax turns logits into probabilities before ranking, and
// labels come from a file with one label per line in class order.
package classify
