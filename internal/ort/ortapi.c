#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "ortapi.h"

typedef void *(*getApiFn)(uint32_t);
typedef struct { getApiFn GetApi; void *GetVersionString; } apiBase;
typedef void *(*getApiBaseFn)(void);
typedef const char *(*errMsgFn)(void *);
typedef void (*releaseStatusFn)(void *);

void **ortAPI(void *h) {
	getApiBaseFn base = (getApiBaseFn)dlsym(h, "OrtGetApiBase");
	return base ? (void **)((apiBase *)base())->GetApi(ortAPIVersion) : NULL;
}

char *ortStatusMessage(void **api, void *status) {
	if (!status) return NULL;
	char *msg = strdup(((errMsgFn)api[idxGetErrorMessage])(status));
	((releaseStatusFn)api[idxReleaseStatus])(status);
	return msg;
}
