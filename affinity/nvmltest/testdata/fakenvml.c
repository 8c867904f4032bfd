// A fake libnvidia-ml.so.1: just the NVML calls affinity.NVML makes, with
// FAKE_GPUS devices (a -D at build time). Each device i has UUID
// GPU-fake-<i>, name "Fake GPU", 16 GiB, and PCI bus 18 or 9a (where
// affinity/testdata/numa2x32 has NUMA nodes 0 and 1). Layouts follow
// nvml.h (NVML API 12, as go-nvml vendors it).
//
// Every device is idle (all its memory free, no process) unless the file
// named by FAKE_NVML_STATE says otherwise; it is read at each call, so a
// test can change it while the code under test runs. One entry a line:
//   <index> free <bytes>          the device's free memory
//   <index> pid <pid> <bytes>     a compute process and the memory it uses
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define FAKE_TOTAL (16ULL << 30)
#define FAKE_MAX_PROCS 16

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

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, fakeDevice **d) {
	unsigned int i;
	char rest;
	if (sscanf(uuid, "GPU-fake-%u%c", &i, &rest) != 1 || i >= FAKE_GPUS) return NVML_ERROR_NOT_FOUND;
	return nvmlDeviceGetHandleByIndex_v2(i, d);
}

// fakeState reads device's entries from FAKE_NVML_STATE: its free memory
// (the total when the file does not say) and up to FAKE_MAX_PROCS
// processes; it returns how many processes.
static unsigned int fakeState(int device, unsigned long long *free, nvmlProcessInfo_t *procs) {
	*free = FAKE_TOTAL;
	const char *path = getenv("FAKE_NVML_STATE");
	FILE *f = path && *path ? fopen(path, "r") : NULL;
	if (!f) return 0;
	unsigned int n = 0;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		int index;
		unsigned int pid;
		unsigned long long bytes;
		if (sscanf(line, "%d free %llu", &index, &bytes) == 2 && index == device) {
			*free = bytes;
		} else if (sscanf(line, "%d pid %u %llu", &index, &pid, &bytes) == 3 && index == device && n < FAKE_MAX_PROCS) {
			procs[n].pid = pid;
			procs[n].usedGpuMemory = bytes;
			procs[n].gpuInstanceId = procs[n].computeInstanceId = 0xFFFFFFFF;
			n++;
		}
	}
	fclose(f);
	return n;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(fakeDevice *d, nvmlMemory_t *m) {
	nvmlProcessInfo_t procs[FAKE_MAX_PROCS];
	fakeState(d->index, &m->free, procs);
	m->total = FAKE_TOTAL;
	m->used = m->free < m->total ? m->total - m->free : 0;
	return NVML_SUCCESS;
}

// As NVML documents it: *count in, the room in infos; out, how many there
// are, with NVML_ERROR_INSUFFICIENT_SIZE when they do not fit.
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(fakeDevice *d, unsigned int *count, nvmlProcessInfo_t *infos) {
	nvmlProcessInfo_t procs[FAKE_MAX_PROCS];
	unsigned long long free;
	unsigned int n = fakeState(d->index, &free, procs);
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memcpy(infos, procs, n * sizeof procs[0]);
	*count = n;
	return NVML_SUCCESS;
}

// No CPU affinity: like a device that does not report it.
nvmlReturn_t nvmlDeviceGetCpuAffinity(fakeDevice *d, unsigned int n, unsigned long *set) {
	(void)d; (void)n; (void)set;
	return NVML_ERROR_NOT_SUPPORTED;
}
