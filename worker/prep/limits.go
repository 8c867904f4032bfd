package prep

import "github.com/supervisor-dev/supervisor/internal/v2"

// limits bounds what decoding one of m's requests may allocate (see
// v2.Limits): no more inputs and outputs than the model has (a valid
// request names each once) and no more BYTES elements than max_images
// for an image model, or than max_body_bytes pays for (at
// v2.BytesElementCost each) for any other, counted before they are
// expanded.
func (m *model) limits() v2.Limits {
	l := v2.Limits{MaxInputs: len(m.api.Inputs), MaxOutputs: len(m.api.Outputs), MaxBodyBytes: m.maxBody}
	if m.image != nil {
		l.MaxBytesElements = int64(m.image.MaxImages)
	}
	return l
}
