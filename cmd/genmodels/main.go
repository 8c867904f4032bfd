// Command genmodels writes the project's ONNX models (default, mlp, types,
// fixed) into a directory, with sample V2 requests for default and mlp
// (default.request.json, mlp.request.json). The models are built in Go from fixed seeds, so
// running it again gives byte-identical files. With -resnet50 it also
// writes the ResNet-50-class models (resnet50.onnx, resnet50-fp16.onnx:
// ResNet-50's graph with random weights, 100 and 50 MB), which
// scripts/gpu-check measures; gpu-bundle ships this binary instead of them.
//
//	go run ./cmd/genmodels -o models
//	bin/genmodels -o models -resnet50
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

func main() {
	dir := flag.String("o", "models", "directory to write the .onnx files into")
	resnet := flag.Bool("resnet50", false, "also write resnet50.onnx and resnet50-fp16.onnx (150 MB together)")
	flag.Parse()
	err := onnxmodel.WriteAll(*dir)
	if err == nil && *resnet {
		err = onnxmodel.Write(*dir, onnxmodel.ResNet50Files())
	}
	if err == nil {
		err = writeRequests(*dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genmodels:", err)
		os.Exit(1)
	}
}
