// Command genmodels writes the project's ONNX models (default, mlp, types,
// fixed) into a directory, with sample V2 requests for default and mlp
// (default.request.json, mlp.request.json). The models are built in Go from fixed seeds, so
// running it again gives byte-identical files.
//
//	go run ./cmd/genmodels -o models
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

func main() {
	dir := flag.String("o", "models", "directory to write the .onnx files into")
	flag.Parse()
	err := onnxmodel.WriteAll(*dir)
	if err == nil {
		err = writeRequests(*dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genmodels:", err)
		os.Exit(1)
	}
}
