package ort

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "ortapi.h"

typedef void *(*createMemInfoFn)(const char *, int, int, int, void **);
typedef void (*releaseFn)(void *);
typedef void *(*bindOutDevFn)(void *, const char *, const void *);
typedef void *(*getAllocFn)(void **);
typedef void *(*bindingFn)(void *);
typedef void *(*boundValuesFn)(const void *, void *, void ***, size_t *);
typedef void *(*allocFreeFn)(void *, void *);
typedef void *(*mutDataFn)(void *, void **);
typedef void *(*typeShapeFn)(const void *, void **);
typedef void *(*sizeFn)(const void *, size_t *);
typedef void *(*dimsFn)(const void *, int64_t *, size_t);
typedef void *(*memInfoFn)(const void *, const void **);
typedef void *(*memNameFn)(const void *, const char **);
typedef void *(*runBindingFn)(void *, const void *, const void *);

#define CALL(idx, type, ...) ((type)api[idx])(__VA_ARGS__)

// loadedAPI returns the OrtApi of the library at path, which this process
// has loaded (ort.Init): dlopen only takes one more reference to it.
static void **loadedAPI(const char *path, char **err) {
	void *h = dlopen(path, RTLD_LAZY);
	if (!h) { *err = strdup(dlerror()); return NULL; }
	void **api = ortAPI(h);
	if (!api) *err = strdup("the library does not serve ONNX Runtime C API version 24");
	return api;
}

static char *newMemInfo(void **api, const char *name, int memType, void **out) {
	return ortStatusMessage(api, CALL(idxCreateMemoryInfo, createMemInfoFn, name, 0, 0, memType, out));
}

static void releaseMemInfo(void **api, void *mi) { CALL(idxReleaseMemoryInfo, releaseFn, mi); }

static char *bindOutputToDevice(void **api, void *b, const char *name, void *mi) {
	return ortStatusMessage(api, CALL(idxBindOutputToDevice, bindOutDevFn, b, name, mi));
}

// runWithBinding runs session on binding b under run options ro (NULL:
// the defaults), so that ro's terminate flag can stop it.
static char *runWithBinding(void **api, void *session, void *ro, void *b) {
	return ortStatusMessage(api, CALL(idxRunWithBinding, runBindingFn, session, ro, b));
}

// syncBoundOutputs waits until every output of b is in place: a GPU
// provider may copy into bound host memory on a stream of its own.
static char *syncBoundOutputs(void **api, void *b) {
	return ortStatusMessage(api, CALL(idxSynchronizeBoundOutputs, bindingFn, b));
}

// boundValues gets the values a run put in b's outputs, in the order they
// were bound; the caller releases them with freeBoundValues.
static char *boundValues(void **api, void *b, void ***vals, size_t *n) {
	void *alloc = NULL;
	char *err = ortStatusMessage(api, CALL(idxGetAllocatorWithDefaultOptions, getAllocFn, &alloc));
	if (err) return err;
	return ortStatusMessage(api, CALL(idxGetBoundOutputValues, boundValuesFn, b, alloc, vals, n));
}

static void freeBoundValues(void **api, void **vals, size_t n) {
	if (!vals) return;
	for (size_t i = 0; i < n; i++) CALL(idxReleaseValue, releaseFn, vals[i]);
	void *alloc = NULL;
	void *st = CALL(idxGetAllocatorWithDefaultOptions, getAllocFn, &alloc);
	if (st) { free(ortStatusMessage(api, st)); return; }
	free(ortStatusMessage(api, CALL(idxAllocatorFree, allocFreeFn, alloc, vals)));
}

// tensorView reads where a tensor's data is (its memory info's name), its
// shape (at most maxDims dimensions) and its element count.
typedef struct {
	void *data;
	const char *memName;
	size_t rank, count;
} view;

static char *tensorView(void **api, void *v, int64_t *dims, size_t maxDims, view *out) {
	const void *mi = NULL;
	char *err = ortStatusMessage(api, CALL(idxGetTensorMutableData, mutDataFn, v, &out->data));
	if (!err) err = ortStatusMessage(api, CALL(idxGetTensorMemoryInfo, memInfoFn, v, &mi));
	if (!err) err = ortStatusMessage(api, CALL(idxMemoryInfoGetName, memNameFn, mi, &out->memName));
	void *info = NULL;
	if (!err) err = ortStatusMessage(api, CALL(idxGetTensorTypeAndShape, typeShapeFn, v, &info));
	if (err) return err;
	err = ortStatusMessage(api, CALL(idxGetDimensionsCount, sizeFn, info, &out->rank));
	if (!err && out->rank > maxDims) err = strdup("the output has more dimensions than the server supports");
	if (!err) err = ortStatusMessage(api, CALL(idxGetDimensions, dimsFn, info, dims, out->rank));
	if (!err) err = ortStatusMessage(api, CALL(idxGetTensorShapeElementCount, sizeFn, info, &out->count));
	CALL(idxReleaseTensorTypeAndShapeInfo, releaseFn, info);
	return err;
}
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// The cgo half of outbind.go: ONNX Runtime calls onnxruntime_go v1.27.0
// does not wrap (CreateMemoryInfo, BindOutputToDevice, RunWithBinding with
// run options, SynchronizeBoundOutputs, GetBoundOutputValues without its
// copy into Go values, GetTensorMemoryInfo), made through the OrtApi table
// of the library ort.Init loaded.

// maxRank bounds the rank of an output read from a bound value.
const maxRank = 64

// boundAPI is the loaded library's OrtApi, looked up once.
var boundAPI struct {
	once sync.Once
	api  *unsafe.Pointer
	err  error
}

// loadedAPI returns the OrtApi of the library Init loaded.
func loadedAPI() (*unsafe.Pointer, error) {
	b := &boundAPI
	b.once.Do(func() {
		environment.mu.Lock()
		path, ok := environment.path, environment.done && environment.err == nil
		environment.mu.Unlock()
		if !ok {
			b.err = errors.New("ort.Init has not succeeded")
			return
		}
		cPath := C.CString(path)
		defer C.free(unsafe.Pointer(cPath))
		var cErr *C.char
		b.api = (*unsafe.Pointer)(unsafe.Pointer(C.loadedAPI(cPath, &cErr)))
		b.err = cError(cErr)
	})
	return b.api, b.err
}

// cError turns a message a C helper returned into an error, freeing it.
func cError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}

// newMemoryInfo creates an OrtMemoryInfo for device 0 of the named
// allocator ("Cpu", "CudaPinned"), OrtDeviceAllocator, of memType.
func newMemoryInfo(api *unsafe.Pointer, name string, memType int) (unsafe.Pointer, error) {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	var mi unsafe.Pointer
	err := cError(C.newMemInfo((*unsafe.Pointer)(api), cName, C.int(memType), &mi))
	return mi, err
}

func releaseMemoryInfo(api *unsafe.Pointer, mi unsafe.Pointer) {
	C.releaseMemInfo((*unsafe.Pointer)(api), mi)
}

// bindOutputToDevice asks ORT to allocate output name, when it runs
// binding, from the allocator of memory info mi.
func bindOutputToDevice(api *unsafe.Pointer, binding unsafe.Pointer, name string, mi unsafe.Pointer) error {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	return cError(C.bindOutputToDevice((*unsafe.Pointer)(api), binding, cName, mi))
}

// runWithBinding runs session on binding under run options ro (nil: the
// defaults): the OrtApi call onnxruntime_go's RunWithBinding makes, with
// run options it does not take.
func runWithBinding(api *unsafe.Pointer, session, ro, binding unsafe.Pointer) error {
	return cError(C.runWithBinding((*unsafe.Pointer)(api), session, ro, binding))
}

// syncBoundOutputs waits for the outputs of the run of binding to be
// complete in the memory they are bound to (SynchronizeBoundOutputs).
func syncBoundOutputs(api *unsafe.Pointer, binding unsafe.Pointer) error {
	return cError(C.syncBoundOutputs((*unsafe.Pointer)(api), binding))
}

// boundValues returns the OrtValues a run of binding produced, in the
// order its outputs were bound, and a func that releases them.
func boundValues(api *unsafe.Pointer, binding unsafe.Pointer) ([]unsafe.Pointer, func(), error) {
	var vals *unsafe.Pointer
	var n C.size_t
	if err := cError(C.boundValues((*unsafe.Pointer)(api), binding, &vals, &n)); err != nil {
		return nil, func() {}, err
	}
	release := func() { C.freeBoundValues((*unsafe.Pointer)(api), vals, n) }
	return unsafe.Slice(vals, int(n)), release, nil
}

// tensorView is where an output tensor's data is and what shape it has;
// Data points into ORT's memory, valid until the value is released.
type tensorView struct {
	Data   unsafe.Pointer
	Memory string // the allocator's name: "Cpu", "CudaPinned"
	Shape  []int64
	Count  int64 // elements
}

func viewTensor(api *unsafe.Pointer, v unsafe.Pointer) (tensorView, error) {
	var dims [maxRank]C.int64_t
	var out C.view
	if err := cError(C.tensorView((*unsafe.Pointer)(api), v, &dims[0], maxRank, &out)); err != nil {
		return tensorView{}, err
	}
	shape := make([]int64, int(out.rank)) // [] (not nil) for a scalar
	for i := range shape {
		shape[i] = int64(dims[i])
	}
	return tensorView{Data: out.data, Memory: C.GoString(out.memName), Shape: shape, Count: int64(out.count)}, nil
}
