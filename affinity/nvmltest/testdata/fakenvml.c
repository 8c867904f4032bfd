// A fake libnvidia-ml.so.1: just the NVML calls affinity.NVML makes, with
// FAKE_GPUS devices (a -D at build time). Each device i has UUID
// GPU-fake-<i>, name "Fake GPU", 16 GiB, and PCI bus 18 or 9a (where
// affinity/testdata/numa2x32 has NUMA nodes 0 and 1). Layouts follow
// nvml.h (NVML API 12, as go-nvml vendors it).
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
enum { NVML_SUCCESS = 0, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3 };

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

// Handles point into devices: go-nvml keeps them as pointers, and the Go
// runtime rejects small integers in pointer slots.
typedef struct { int index; } fakeDevice;
static fakeDevice devices[FAKE_GPUS > 0 ? FAKE_GPUS : 1];

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlInit(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == NVML_SUCCESS ? "Success" : "Fake NVML error"; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) {
	snprintf(v, n, "550.54.15");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
	*v = 12040;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
	*n = FAKE_GPUS;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, fakeDevice **d) {
	if (i >= FAKE_GPUS) return NVML_ERROR_INVALID_ARGUMENT;
	devices[i].index = (int)i;
	*d = &devices[i];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(fakeDevice *d, char *s, unsigned int n) {
	snprintf(s, n, "GPU-fake-%d", d->index);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(fakeDevice *d, char *s, unsigned int n) {
	(void)d;
	snprintf(s, n, "Fake GPU");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(fakeDevice *d, nvmlPciInfo_t *p) {
	memset(p, 0, sizeof *p);
	p->bus = d->index % 2 ? 0x9a : 0x18;
	snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
	snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(fakeDevice *d, nvmlMemory_t *m) {
	(void)d;
	m->total = 16ULL << 30;
	m->free = m->total;
	m->used = 0;
	return NVML_SUCCESS;
}

// No CPU affinity: like a device that does not report it.
nvmlReturn_t nvmlDeviceGetCpuAffinity(fakeDevice *d, unsigned int n, unsigned long *set) {
	(void)d; (void)n; (void)set;
	return NVML_ERROR_NOT_SUPPORTED;
}
