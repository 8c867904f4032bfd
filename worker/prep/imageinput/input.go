package imageinput

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/supervisor-dev/supervisor/internal/imageprep"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/nicethread"
)

// Input is an image model's input as the prep stage builds it: the
// model's declared input, filled one decoded image per batch item.
type Input struct {
	cfg       imageprep.Config
	spec      tensor.Spec // the model's declared input
	MaxImages int
	// maxRequestPixels bounds the pixels of all of a request's images
	// together, as their headers declare them.
	maxRequestPixels int64
	// Gate weighs the worker's decodes by their cost and bounds them by
	// its budget; nil: no bound.
	Gate *decodegate.Gate
}

// New checks the configured preprocessing against the model's
// declared input and fills in what the config left to the model (size,
// dtype). The errors name the config key to change.
func New(md *tensor.Metadata, in *worker.ImageInput) (*Input, error) {
	if len(md.Inputs) != 1 {
		return nil, fmt.Errorf("preprocess kind image fills the model's only input, but it has %d inputs (%s)",
			len(md.Inputs), tensor.SpecNames(md.Inputs))
	}
	spec := md.Inputs[0]
	c := in.Config()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("input %q %s %s: %s", spec.Name, spec.DType, tensor.FormatShape(spec.Shape), fmt.Sprintf(format, args...))
	}
	if c.Layout == "" {
		c.Layout = imageprep.NCHW
	}
	if len(spec.Shape) != 4 {
		return nil, bad("an image input must have 4 dimensions ([batch,3,height,width] or [batch,height,width,3])")
	}
	ch, h, w := spec.Shape[1], spec.Shape[2], spec.Shape[3]
	if c.Layout == imageprep.NHWC {
		h, w, ch = spec.Shape[1], spec.Shape[2], spec.Shape[3]
	}
	if ch != 3 && ch != -1 {
		return nil, bad("has %d channels where layout %s puts them; images have 3 (check preprocess.layout)", ch, c.Layout)
	}
	var err error
	if c.Width, err = side("width", c.Width, w); err != nil {
		return nil, bad("%v", err)
	}
	if c.Height, err = side("height", c.Height, h); err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case in.DType == "":
		c.DType = spec.DType
	default:
		c.DType, _ = tensor.ParseDType(in.DType)
		if c.DType != spec.DType {
			return nil, bad("preprocess.dtype is %s, the model wants %s (leave dtype unset to follow the model)", c.DType, spec.DType)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	return &Input{cfg: c, spec: spec, MaxImages: max(in.MaxImages, 1), maxRequestPixels: requestPixels(in)}, nil
}

// requestPixels is the configured max_request_pixels, or its default:
// four images of max_pixels.
func requestPixels(in *worker.ImageInput) int64 {
	if in.MaxRequestPixels > 0 {
		return int64(in.MaxRequestPixels)
	}
	return 4 * int64(cmp.Or(in.MaxPixels, imageprep.DefaultMaxPixels))
}

// side reconciles a configured width or height (0 = unset) with the
// model's dimension (-1 = dynamic).
func side(key string, configured int, model int64) (int, error) {
	switch {
	case configured == 0 && model < 1:
		return 0, fmt.Errorf("the model's %s is dynamic: set preprocess.%s", key, key)
	case configured == 0:
		return int(model), nil
	case model >= 1 && int64(configured) != model:
		return 0, fmt.Errorf("preprocess.%s is %d, the model's is %d (leave it unset to follow the model)", key, configured, model)
	}
	return configured, nil
}

// Name is the model's input the images fill.
func (im *Input) Name() string { return im.spec.Name }

// ClientSpec is the input clients send: the encoded images as a BYTES
// vector, one element per image. A model with a fixed batch of 1 still
// takes several images: each is run on its own.
func (im *Input) ClientSpec() tensor.Spec {
	return tensor.Spec{Name: im.spec.Name, DType: tensor.Bytes, Shape: []int64{-1}}
}

// chunk is how many images go to the infer worker in one tensor, for n
// images in the request; 0 when the model cannot take n.
func (im *Input) chunk(n int) int {
	switch b := im.spec.Shape[0]; {
	case b < 1:
		return n
	case b == 1 || int64(n) == b:
		return int(b)
	}
	return 0
}

// Error is a client's image the prep stage refuses (400).
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// CheckCount checks the number of images, n, before any image is read:
// tensors does with the images in hand, the prefix check with n known
// from the shape.
func (im *Input) CheckCount(n int64) error {
	switch {
	case n == 0:
		return &Error{fmt.Sprintf("input %q has no images; send at least one", im.spec.Name)}
	case n > int64(im.MaxImages):
		return &Error{fmt.Sprintf("input %q has %d images, more than this model's max_images (%d); split the request", im.spec.Name, n, im.MaxImages)}
	case im.chunk(int(n)) == 0:
		return &Error{fmt.Sprintf("input %q: the model takes exactly %d images per request, got %d", im.spec.Name, im.spec.Shape[0], n)}
	}
	return nil
}

// Tensors decodes the images into the model's input, chunk images per
// tensor. First every image's header is inspected, so that an image
// refused from its header (format, size, cost) or a request over
// max_request_pixels costs no decoding at all; then the images are
// decoded one by one, and stop is asked before each: a client that has
// gone gets a *StoppedError, and nothing more is decoded for it. An
// undecodable, unsupported or oversized image is an *Error naming it.
func (im *Input) Tensors(images [][]byte, stop Stopper) ([]tensor.Tensor, error) {
	n := len(images)
	if err := im.CheckCount(int64(n)); err != nil {
		return nil, err
	}
	per := im.chunk(n)
	costs, err := im.inspect(images)
	if err != nil {
		return nil, err
	}
	size := im.cfg.ImageBytes()
	out := make([]tensor.Tensor, 0, n/per)
	for start := 0; start < n; start += per {
		t := tensor.Tensor{Name: im.spec.Name, DType: im.cfg.DType, Shape: im.cfg.Shape(per), Data: make([]byte, per*size)}
		for j := range per {
			i := start + j
			if err := im.decode(t.Data[j*size:(j+1)*size], images[i], costs[i], stop); err != nil {
				var se *StoppedError
				if errors.As(err, &se) {
					se.Decoded, se.Total = i, n
					return nil, se
				}
				return nil, im.imageErr(images, i, err)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// decode decodes one image of cost bytes (its Header.DecodeBytes) into
// dst once the gate lets it, unless its client has gone (a
// *StoppedError, without counts) before.
func (im *Input) decode(dst, img []byte, cost int64, stop Stopper) error {
	if err := stop.Check(); err != nil {
		return &StoppedError{Reason: err}
	}
	c, err := im.Gate.Enter(cost, stop.Check)
	if err != nil {
		if errors.Is(err, decodegate.ErrOverBudget) { // inspect refuses it first
			return err
		}
		return &StoppedError{Reason: err}
	}
	defer c.Release()
	defer stop.AtWork().End()
	if im.Gate.IsLarge(cost) {
		return nicethread.Run(func() error { return im.cfg.Preprocess(dst, img) })
	}
	return im.cfg.Preprocess(dst, img)
}

// inspect reads every image's header and returns what each will cost to
// decode, refusing the request at the first image refused from its
// header, that could never fit the decode gate's budget, or that brings
// the request's pixels over maxRequestPixels.
func (im *Input) inspect(images [][]byte) ([]int64, error) {
	var total int64
	costs := make([]int64, len(images))
	for i, img := range images {
		h, err := im.cfg.Inspect(img)
		if err != nil {
			return nil, im.imageErr(images, i, err)
		}
		if err := im.Gate.Check(h.DecodeBytes); err != nil {
			return nil, &Error{fmt.Sprintf("input %q: image %d of %d (%s %d×%d, %d bytes): %v",
				im.spec.Name, i, len(images), h.Format, h.Width, h.Height, len(img), err)}
		}
		if total += h.Pixels(); total > im.maxRequestPixels {
			return nil, &Error{fmt.Sprintf("input %q: image %d of %d (%s %d×%d) brings the request to %d pixels, over this model's max_request_pixels (%d); send fewer or smaller images",
				im.spec.Name, i, len(images), h.Format, h.Width, h.Height, total, im.maxRequestPixels)}
		}
		costs[i] = h.DecodeBytes
	}
	return costs, nil
}

// imageErr names image i in an error Inspect or Preprocess returned for
// it; other errors (the server's) pass through.
func (im *Input) imageErr(images [][]byte, i int, err error) error {
	if isImageError(err) {
		return &Error{fmt.Sprintf("input %q: image %d of %d (%d bytes): %v", im.spec.Name, i, len(images), len(images[i]), err)}
	}
	return err
}

func isImageError(err error) bool {
	return errors.Is(err, imageprep.ErrCorrupt) || errors.Is(err, imageprep.ErrUnsupportedFormat) ||
		errors.Is(err, imageprep.ErrTooManyPixels) || errors.Is(err, imageprep.ErrTooCostly)
}
