// Calls into ONNX Runtime's C API that onnxruntime_go v1.27.0 does not wrap
// (providers.go, outbind.go). OrtApi is a table of function pointers that
// ONNX Runtime only ever appends to (its ABI promise), so an entry's index
// is fixed for every library that serves API version 24. The indices below
// were read from onnxruntime_c_api.h (ORT 1.24, the header onnxruntime_go
// v1.27.0 ships) with offsetof(OrtApi, X)/sizeof(void*).
#ifndef SUPERVISOR_ORTAPI_H
#define SUPERVISOR_ORTAPI_H

#include <stddef.h>
#include <stdint.h>

enum {
	ortAPIVersion = 24,
	idxGetErrorMessage = 2,
	idxGetTensorMutableData = 51,
	idxGetDimensionsCount = 61,
	idxGetDimensions = 62,
	idxGetTensorShapeElementCount = 64,
	idxGetTensorTypeAndShape = 65,
	idxCreateMemoryInfo = 68,
	idxMemoryInfoGetName = 71,
	idxAllocatorFree = 76,
	idxGetAllocatorWithDefaultOptions = 78,
	idxReleaseStatus = 93,
	idxReleaseMemoryInfo = 94,
	idxReleaseValue = 96,
	idxReleaseTensorTypeAndShapeInfo = 99,
	idxGetAvailableProviders = 125,
	idxAppendCUDAV1 = 152,           // SessionOptionsAppendExecutionProvider_CUDA
	idxAppendTensorRTV1 = 159,       // SessionOptionsAppendExecutionProvider_TensorRT
	idxReleaseAvailableProviders = 126,
	idxRunWithBinding = 133,
	idxBindOutputToDevice = 138,
	idxGetBoundOutputValues = 140,
	idxGetTensorMemoryInfo = 194,
	idxSynchronizeBoundOutputs = 203,
};

// ortAPI returns the OrtApi table of the library dlopen handle h, or NULL
// when it does not serve API version 24.
void **ortAPI(void *h);

// ortStatusMessage returns status's message in memory the caller frees,
// and releases status; NULL when status is NULL (success).
char *ortStatusMessage(void **api, void *status);

#endif
