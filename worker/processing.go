package worker

import (
	"time"

	"github.com/supervisor-dev/supervisor/internal/imageprep"
)

// Processing is what a prep worker does to one model's requests beyond
// decoding and validating V2 tensors. The master sends one per model that
// has a preprocess or postprocess section; a model without one is served
// tensor in, tensor out.
type Processing struct {
	// Model is the model's name, as in Spec.Models.
	Model string `json:"model"`
	// Image makes the model's only input an encoded image: clients send
	// JPEG/PNG bytes (a V2 BYTES tensor, or a raw image body) and the prep
	// worker decodes and resizes them into the input tensor. nil means
	// the input is a tensor, sent as one.
	Image *ImageInput `json:"image,omitempty"`
	// Classify sets how the classification extension ranks one output.
	// nil means raw scores without labels, and only on request.
	Classify *Classify `json:"classify,omitempty"`
	// Cache, when set, serves identical requests from the model's
	// response cache (internal/respcache); nil means every request runs.
	Cache *ResponseCache `json:"cache,omitempty"`
}

// ResponseCache is where a model's answers are cached and for how long.
type ResponseCache struct {
	// Path is the shared-memory segment the master created.
	Path string `json:"path"`
	// TTL is how long an entry answers; 0 means until evicted.
	TTL time.Duration `json:"ttl,omitempty"`
	// Identity is what the prep worker decides of the model's answers
	// (its name and processing settings), the start of every key: a
	// reload that changes it makes the old entries unreachable.
	Identity string `json:"identity"`
	// Model is the model file's content identity (internal/modelid) when
	// the master made the spec: the key's model part until an infer
	// worker answers. Answers are stored under the identity of the infer
	// worker that computed them (ModelIDHeader), which may differ during
	// a reload or after a file changed under a restarted worker, and
	// later lookups use the last one an infer worker answered with.
	Model string `json:"model,omitempty"`
	// Redis is the second-level cache's URL (internal/respredis); ""
	// means the local segment alone.
	Redis string `json:"redis,omitempty"`
}

// ModelIDHeader is on every answer of an infer worker: the content
// identity (internal/modelid) of the model file that computed it, which
// that worker hashed when it loaded the model. The prep worker stores the
// answer in the response cache under it, never under the identity it
// believes the model has: during a reload old prep workers talk to new
// infer workers (infer is reconciled first), and a restarted infer
// worker loads whatever the file holds now.
const ModelIDHeader = "Supervisor-Model-Id"

// ImageInput is the tensor one image becomes: the model's preprocess
// settings, whose one definition (fields, defaults, validation) is
// imageprep.Settings; the master sends them as the config decoded and
// checked them.
type ImageInput = imageprep.Settings

// Classify is the classification postprocessing of one model output.
type Classify struct {
	// Output is the output ranked; "" means the model's only output.
	Output string `json:"output,omitempty"`
	// Labels is the labels file (one per line, in class order); "" means
	// none.
	Labels string `json:"labels,omitempty"`
	// Softmax turns the scores into probabilities before ranking.
	Softmax bool `json:"softmax,omitempty"`
	// TopK is how many classes a raw image body's response carries, in
	// place of the output's scores; 0 returns the scores.
	TopK int `json:"top_k,omitempty"`
}
