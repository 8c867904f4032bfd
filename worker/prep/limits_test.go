package prep

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// TestTextModelBytesBoundFromMaxBody: a model the router builds holds the
// worker's max_body_bytes, so a BYTES flood to a text model (no
// max_images) one element past what max_body_bytes pays for is refused
// 413 from its first bytes, naming max_body_bytes, and one at the bound
// passes the check; without the router's figure the decoder's fixed
// 65,536 would apply instead.
func TestTextModelBytesBoundFromMaxBody(t *testing.T) {
	const maxBody = 1 << 20
	r := newRouter(nil, nil, nil, zerolog.Nop())
	r.maxBody = maxBody
	md := tensor.Metadata{Name: "text", Inputs: []tensor.Spec{{Name: "x", DType: tensor.Bytes, Shape: []int64{-1}}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, 4}}}}
	m := r.newModel(md, "")
	bound := maxBody / v2.BytesElementCost
	flood := hostile.BytesFloodJSON("x", bound+1)
	status, body := checkPrefixOf(m, "application/json", "", flood, 64<<10)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "max_body_bytes allows") || !strings.Contains(body, strconv.Itoa(bound)) {
		t.Errorf("%d elements to a text model: %d %s, want 413 naming max_body_bytes and %d", bound+1, status, body, bound)
	}
	if status, body := checkPrefixOf(m, "application/json", "", hostile.BytesFloodJSON("x", bound), 64<<10); status != http.StatusNoContent {
		t.Errorf("%d elements, at the bound: %d %s, want 204: the check passed", bound, status, body)
	}
}
