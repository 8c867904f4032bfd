package ort

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "ortapi.h"

typedef void *(*availFn)(char ***, int *);
typedef void *(*releaseAvailFn)(char **, int);

// ortProviders returns the library's provider names, each followed by a
// newline, or NULL with *err set; the caller frees both.
static char *ortProviders(const char *path, char **err) {
	*err = NULL;
	void *h = dlopen(path, RTLD_LAZY);
	if (!h) { *err = strdup(dlerror()); return NULL; }
	char *joined = NULL;
	void **api = ortAPI(h);
	if (!api) {
		*err = strdup("the library does not serve ONNX Runtime C API version 24");
		dlclose(h);
		return NULL;
	}
	char **list = NULL;
	int n = 0;
	void *st = ((availFn)api[idxGetAvailableProviders])(&list, &n);
	if (st) {
		*err = ortStatusMessage(api, st);
	} else {
		size_t size = 1;
		for (int i = 0; i < n; i++) size += strlen(list[i]) + 1;
		joined = calloc(size, 1);
		for (int i = 0; i < n; i++) { strcat(joined, list[i]); strcat(joined, "\n"); }
		((releaseAvailFn)api[idxReleaseAvailableProviders])(list, n);
	}
	dlclose(h);
	return joined;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Execution provider names as ONNX Runtime spells them.
const (
	ProviderCPU      = "CPUExecutionProvider"
	ProviderCUDA     = "CUDAExecutionProvider"
	ProviderTensorRT = "TensorrtExecutionProvider"
)

// AvailableProviders returns the execution providers the library at
// libPath was built with (OrtGetAvailableProviders), in ONNX Runtime's
// order of preference: ["CPUExecutionProvider"] for the CPU build from npm,
// TensorRT, CUDA and CPU for the official GPU build. A provider listed
// here may still fail to start (a missing CUDA or cuDNN library, no
// device); one not listed never can. It loads the library if this process
// has not, without creating an ORT environment, so `supervisor check` can
// ask without initialising anything.
func AvailableProviders(libPath string) ([]string, error) {
	cPath := C.CString(libPath)
	defer C.free(unsafe.Pointer(cPath))
	var cErr *C.char
	joined := C.ortProviders(cPath, &cErr)
	if joined == nil {
		defer C.free(unsafe.Pointer(cErr))
		return nil, fmt.Errorf("could not list the execution providers of ONNX Runtime %q: %s", libPath, C.GoString(cErr))
	}
	defer C.free(unsafe.Pointer(joined))
	return strings.Fields(C.GoString(joined)), nil
}
