// Command hostile-payloads writes the payloads of internal/hostile into a
// directory, as request bodies for curl, so that scripts can measure what
// each costs a running server (scripts/bench-hostile):
//
//	scan-bomb.jpg      ScanBombJPEG(8000): 4096×4096, 8000 empty scans
//	png-bomb.png       PNGBomb(6000, 6000): 16-bit RGBA
//	png8-bomb.png      PNGBomb8(6000, 6000): 8-bit RGBA, allowed, 144 MB to decode
//	bytes-flood.json   BytesFloodJSON(input, 22000000): 22 M empty BYTES elements
//	big-batch.json     ten valid 4096×4096 JPEGs (168 megapixels) for input
//	slow-batch.json    nine 4096×4096 JPEGs of 32 scans each (allowed, slow) for input
//
//	go run ./cmd/hostile-payloads -o out/hostile -input data_0
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

func main() {
	dir := flag.String("o", "out/hostile", "directory to write the payloads into")
	input := flag.String("input", "data_0", "the image model's input name")
	flag.Parse()
	if err := write(*dir, *input); err != nil {
		fmt.Fprintln(os.Stderr, "hostile-payloads:", err)
		os.Exit(1)
	}
}

func write(dir, input string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{
		"scan-bomb.jpg":    hostile.ScanBombJPEG(8000),
		"png-bomb.png":     hostile.PNGBomb(6000, 6000),
		"png8-bomb.png":    hostile.PNGBomb8(6000, 6000),
		"bytes-flood.json": hostile.BytesFloodJSON(input, 22_000_000),
		"big-batch.json":   batch(input, 10, hostile.ScanBombJPEG(1)),
		"slow-batch.json":  batch(input, 9, hostile.ScanBombJPEG(32)),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// batch is a V2 JSON request of n copies of img, base64.
func batch(input string, n int, img []byte) []byte {
	data := make([]string, n)
	for i := range data {
		data[i] = base64.StdEncoding.EncodeToString(img)
	}
	b, _ := json.Marshal(map[string]any{"inputs": []any{map[string]any{
		"name": input, "datatype": "BYTES", "shape": []int{n}, "data": data}}})
	return b
}
