package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// imagePhoto is the shared photo the image client sends (37 KB, 500×375
// JPEG: a goldfish to SqueezeNet).
const imagePhoto = "images/ortex_goldfish.jpg"

// findImageModel looks for the shared SqueezeNet and the image client's
// photo under testdata (../shared/testdata from the repository root). It
// returns the model's path and the photo, or why the image attacks are
// skipped: the shared test data is optional, as every test that uses it.
func findImageModel(testdata string) (model string, photo []byte, noImages string) {
	dir, err := filepath.Abs(testdata)
	if err != nil {
		return "", nil, err.Error()
	}
	model = filepath.Join(dir, "squeezenet", "SqueezeNet_fp16.onnx")
	if _, err := os.Stat(model); err != nil {
		return "", nil, fmt.Sprintf("no shared SqueezeNet at %s (clone the shared test data as ../shared/testdata next to the repository, or pass -testdata): %v", model, err)
	}
	photo, err = os.ReadFile(filepath.Join(dir, imagePhoto))
	if err != nil {
		return "", nil, fmt.Sprintf("no photo for the image client: %v", err)
	}
	return model, photo, ""
}
