package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// TestImageModelRefusesHostilePayloads sends the hostile payloads to the
// served SqueezeNet: each is a 400 that says why, and the prep worker
// (one, so every request hits it) serves a real photo afterwards.
func TestImageModelRefusesHostilePayloads(t *testing.T) {
	dir := sharedTestdata(t)
	in := startInstance(t, options{prepWorkers: 1, maxBodyBytes: "64MiB", modelItems: squeezenetItem(dir, 1)})
	const url = "/v2/models/squeezenet/infer"
	images := func(imgs ...[]byte) []byte {
		data := make([]string, len(imgs))
		for i, img := range imgs {
			data[i] = base64.StdEncoding.EncodeToString(img)
		}
		return inferBody(t, v2Tensor{"data_0", "BYTES", []int64{int64(len(imgs))}, data})
	}
	big := hostile.ScanBombJPEGSized(4096, 1) // a valid 16.7-megapixel JPEG
	tenBig := [][]byte{big, big, big, big, big, big, big, big, big, big}
	for _, tt := range []struct {
		name string
		body []byte
		ct   string
		want string
	}{
		{"scan bomb", hostile.ScanBombJPEG(8000), "image/jpeg",
			// From its first 64 KiB (the master's prefix check: "at least
			// 838 scans"), or from all of it ("8000 scans").
			"image 0 of 1 (344879 bytes): image too costly to decode: JPEG of 4096×4096 has "},
		{"PNG bomb", hostile.PNGBomb(6000, 6000), "image/png",
			"image too costly to decode: PNG of 6000×6000 at 16 bits per sample takes 288000000 bytes to decode, over the limit of 160000000"},
		{"BYTES flood", hostile.BytesFloodJSON("data_0", 5_000_000), "",
			`input "data_0": BYTES shape [5000000] makes 5000000 elements in the request, more than the 64 allowed (an image model's max_images)`},
		{"over max_request_pixels", images(tenBig...), "",
			`image 9 of 10 (JPEG 4096×4096) brings the request to 167772160 pixels, over this model's max_request_pixels (160000000)`},
		{"scan bomb behind a photo", images(big, hostile.ScanBombJPEG(100)), "", "image 1 of 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hdr map[string]string
			if tt.ct != "" {
				hdr = map[string]string{"Content-Type": tt.ct}
			}
			code, body, _ := in.post(url, tt.body, hdr)
			var e struct {
				Error string `json:"error"`
			}
			if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, tt.want) {
				t.Errorf("status %d, body %.400s; want 400 with an error containing %q", code, body, tt.want)
			}
		})
	}
	photo, err := os.ReadFile(filepath.Join(dir, "images", "ortex_goldfish.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := in.post(url, photo, map[string]string{"Content-Type": "image/jpeg"})
	checkTop1(t, []photoCase{{"ortex_goldfish.jpg", labelHas("goldfish"), "goldfish"}}, classesOf(t, code, body))
}

// TestImageDecodingStopsForAGoneClient: a request of nine costly but
// allowed images (4096×4096 JPEGs of 32 scans each, several seconds in
// all) whose client gives up after 300 ms: the master answers 504, and
// the prep worker stops at the next image instead of decoding the rest.
func TestImageDecodingStopsForAGoneClient(t *testing.T) {
	dir := sharedTestdata(t)
	in := startInstance(t, options{prepWorkers: 1, maxBodyBytes: "64MiB", modelItems: squeezenetItem(dir, 0)})
	costly := base64.StdEncoding.EncodeToString(hostile.ScanBombJPEG(32))
	data := []string{costly, costly, costly, costly, costly, costly, costly, costly, costly}
	body := inferBody(t, v2Tensor{"data_0", "BYTES", []int64{9}, data})
	code, resp, _ := in.post("/v2/models/squeezenet/infer", body, map[string]string{"X-Request-Timeout": "300ms"})
	if code != http.StatusGatewayTimeout {
		t.Fatalf("status %d (%.300s), want 504 from the master", code, resp)
	}
	var stopped struct {
		Decoded int    `json:"decoded"`
		Images  int    `json:"images"`
		Error   string `json:"error"`
	}
	pollUntil(t, 60*time.Second, "the prep worker logs that it stopped", func() bool {
		sc := bufio.NewScanner(strings.NewReader(in.log.String()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "image request abandoned by its client") {
				return json.Unmarshal(sc.Bytes(), &stopped) == nil
			}
		}
		return false
	})
	if stopped.Images != 9 || stopped.Decoded >= 9 || stopped.Error == "" {
		t.Errorf("the prep worker stopped after %d of %d images (%s); want fewer than 9 decoded", stopped.Decoded, stopped.Images, stopped.Error)
	}
	t.Logf("stopped after %d of %d images: %s", stopped.Decoded, stopped.Images, stopped.Error)
}
