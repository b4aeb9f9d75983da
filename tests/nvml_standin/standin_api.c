/* SPDX-License-Identifier: Apache-2.0 */
/* The served subset of the public NVML API (signatures as in nvml.h; structs as nvml.h lays them out,
 * which is what nvidia-ml-py's ctypes classes mirror). Every call re-reads the state file, so state
 * set by one process is seen by the next; calls that change state hold <state>.lock and write through. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include "standin_api.h"

handle_t H_gpu[MAX_GPUS], H_mig[MAX_GPUS][MAX_GI][MAX_CI], H_gi[MAX_GPUS][MAX_GI],
    H_ci[MAX_GPUS][MAX_GI][MAX_CI];
int refcount;

/* ---------------------------------------------------------------- plumbing */

int enter(const char *sym)
{
    if (!refcount) return E_UNINITIALIZED;
    int rc = state_load();
    if (rc == OK) maybe_hang(sym);
    return rc;
}

static int privileged(void) { return !switch_on("no_permission") && !(N.root_only && geteuid() != 0); }

/* lock + reload + hang + permission; returns fd >= 0 or -rc */
int enter_write(const char *sym)
{
    if (!refcount) return -E_UNINITIALIZED;
    int fd = state_lock();
    if (fd < 0) return fd;
    maybe_hang(sym);
    if (!privileged()) { state_commit_unlock(fd, 0); return -E_NO_PERMISSION; }
    return fd;
}

int put(char *buf, unsigned size, const char *s)
{
    if (!buf) return E_INVALID_ARGUMENT;
    if (strlen(s) + 1 > size) return E_INSUFFICIENT_SIZE;
    strcpy(buf, s);
    return OK;
}

handle_t *as(void *p, unsigned kind)
{
    handle_t *h = p;
    uintptr_t lo, hi;
    switch (kind) {
    case 1: lo = (uintptr_t)H_gpu, hi = lo + sizeof H_gpu; break;
    case 2: lo = (uintptr_t)H_mig, hi = lo + sizeof H_mig; break;
    case 3: lo = (uintptr_t)H_gi, hi = lo + sizeof H_gi; break;
    default: lo = (uintptr_t)H_ci, hi = lo + sizeof H_ci; break;
    }
    if (!p || (uintptr_t)p < lo || (uintptr_t)p >= hi || h->kind != kind || h->g >= N.ngpus) return NULL;
    struct gpu *g = &N.gpus[h->g];
    if (kind == 3 && !g->gis[h->gi].used) return NULL;
    if ((kind == 2 || kind == 4) && !g->cis[h->gi][h->ci].used) return NULL;
    return h;
}

/* a physical GPU or a MIG device handle -> GPU (NULL + *rc on failure) */
struct gpu *device(void *p, handle_t **hout, int *rc)
{
    handle_t *h = as(p, 1);
    if (!h) h = as(p, 2);
    if (!h) { *rc = E_INVALID_ARGUMENT; return NULL; }
    if (N.gpus[h->g].lost) { *rc = E_GPU_IS_LOST; return NULL; }
    if (hout) *hout = h;
    return &N.gpus[h->g];
}

unsigned long long now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

const struct profile *profile_by_id(unsigned id, unsigned *index)
{
    for (unsigned i = 0; i < MAX_PROFILES; i++)
        if (N.profiles[i].present && N.profiles[i].id == id) {
            if (index) *index = i;
            return &N.profiles[i];
        }
    return NULL;
}

int busy(const struct gpu *g)
{
    for (unsigned i = 0; i < g->nprocs; i++)
        if (proc_alive(g->procs[i].pid)) return 1;
    return 0;
}

/* ---------------------------------------------------------------- init, system */

API int nvmlInitWithFlags(unsigned flags)
{
    (void)flags;
    if (!refcount)
        for (unsigned g = 0; g < MAX_GPUS; g++) {
            H_gpu[g] = (handle_t){1, g, 0, 0};
            for (unsigned gi = 0; gi < MAX_GI; gi++) {
                H_gi[g][gi] = (handle_t){3, g, gi, 0};
                for (unsigned ci = 0; ci < MAX_CI; ci++)
                    H_mig[g][gi][ci] = (handle_t){2, g, gi, ci}, H_ci[g][gi][ci] = (handle_t){4, g, gi, ci};
            }
        }
    int rc = state_load();
    if (rc) return rc;
    maybe_hang("nvmlInitWithFlags");
    if (switch_on("driver_not_loaded")) return E_DRIVER_NOT_LOADED;
    refcount++;
    return OK;
}
API int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
API int nvmlInit(void) { return nvmlInitWithFlags(0); }

API int nvmlShutdown(void)
{
    if (!refcount) return E_UNINITIALIZED;
    refcount--;
    return OK;
}

API const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case OK: return "Success";
    case E_UNINITIALIZED: return "Uninitialized";
    case E_INVALID_ARGUMENT: return "Invalid Argument";
    case E_NOT_SUPPORTED: return "Not Supported";
    case E_NO_PERMISSION: return "Insufficient Permissions";
    case E_NOT_FOUND: return "Not Found";
    case E_INSUFFICIENT_SIZE: return "Insufficient Size";
    case E_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case E_GPU_IS_LOST: return "GPU is lost";
    case E_IN_USE: return "In use by another client";
    case E_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case E_VERSION_MISMATCH: return "Argument version mismatch";
    case E_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
    }
}

API int nvmlSystemGetDriverVersion(char *buf, unsigned n)
{
    int rc = enter("nvmlSystemGetDriverVersion");
    return rc ? rc : put(buf, n, N.driver_version);
}
API int nvmlSystemGetNVMLVersion(char *buf, unsigned n)
{
    int rc = enter("nvmlSystemGetNVMLVersion");
    return rc ? rc : put(buf, n, N.nvml_version);
}
API int nvmlSystemGetCudaDriverVersion(int *v)
{
    int rc = enter("nvmlSystemGetCudaDriverVersion");
    if (rc) return rc;
    if (!v) return E_INVALID_ARGUMENT;
    *v = N.cuda_version;
    return OK;
}
API int nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

/* ---------------------------------------------------------------- handles, identity */

API int nvmlDeviceGetCount_v2(unsigned *count)
{
    int rc = enter("nvmlDeviceGetCount_v2");
    if (rc) return rc;
    if (!count) return E_INVALID_ARGUMENT;
    *count = N.ngpus;
    return OK;
}
API int nvmlDeviceGetCount(unsigned *count) { return nvmlDeviceGetCount_v2(count); }

API int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **out)
{
    int rc = enter("nvmlDeviceGetHandleByIndex_v2");
    if (rc) return rc;
    if (!out || index >= N.ngpus) return E_INVALID_ARGUMENT;
    if (N.gpus[index].lost) return E_GPU_IS_LOST;
    *out = &H_gpu[index];
    return OK;
}
API int nvmlDeviceGetHandleByIndex(unsigned index, void **out) { return nvmlDeviceGetHandleByIndex_v2(index, out); }

API int nvmlDeviceGetHandleByUUID(const char *uuid, void **out)
{
    int rc = enter("nvmlDeviceGetHandleByUUID");
    if (rc) return rc;
    if (!uuid || !out) return E_INVALID_ARGUMENT;
    for (unsigned g = 0; g < N.ngpus; g++) {
        if (!strcmp(N.gpus[g].uuid, uuid)) { *out = &H_gpu[g]; return N.gpus[g].lost ? E_GPU_IS_LOST : OK; }
        for (unsigned gi = 0; gi < MAX_GI; gi++)
            for (unsigned ci = 0; ci < MAX_CI; ci++)
                if (N.gpus[g].cis[gi][ci].used && !strcmp(N.gpus[g].cis[gi][ci].uuid, uuid)) {
                    *out = &H_mig[g][gi][ci];
                    return OK;
                }
    }
    return E_NOT_FOUND;
}

API int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **out)
{
    int rc = enter("nvmlDeviceGetHandleByPciBusId_v2");
    if (rc) return rc;
    if (!bus || !out) return E_INVALID_ARGUMENT;
    for (unsigned g = 0; g < N.ngpus; g++) {
        const char *b = N.gpus[g].bus_id;  /* accept 00000000:53:00.0 and 0000:53:00.0, any case */
        if (!strcasecmp(b, bus) || (strlen(b) > 4 && !strcasecmp(b + 4, bus))) {
            *out = &H_gpu[g];
            return N.gpus[g].lost ? E_GPU_IS_LOST : OK;
        }
    }
    return E_NOT_FOUND;
}
API int nvmlDeviceGetHandleByPciBusId(const char *bus, void **out) { return nvmlDeviceGetHandleByPciBusId_v2(bus, out); }

API int nvmlDeviceGetName(void *d, char *buf, unsigned n)
{
    DEVICE("nvmlDeviceGetName", d);
    if (h->kind == 1) return put(buf, n, g->name);
    char name[TEXT * 2];
    snprintf(name, sizeof name, "%s MIG %s", g->name, N.profiles[g->gis[h->gi].profile].name);
    return put(buf, n, name);
}

API int nvmlDeviceGetUUID(void *d, char *buf, unsigned n)
{
    DEVICE("nvmlDeviceGetUUID", d);
    return put(buf, n, h->kind == 1 ? g->uuid : g->cis[h->gi][h->ci].uuid);
}

/* nvmlGpuFabricInfo_t (nvml.h): the GPU's NVLink fabric registration, served from the recorded
 * "gpu.N.fabric=<clusterUuid>:<cliqueId>:<state>" (docs/nvml_standin.md); NOT_SUPPORTED when none. */
typedef struct {
    unsigned char clusterUuid[16];
    int status;
    unsigned int cliqueId;
    unsigned int state;
} fabric_info_t;

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

API int nvmlDeviceGetGpuFabricInfo(void *d, fabric_info_t *info)
{
    DEVICE("nvmlDeviceGetGpuFabricInfo", d);
    if (!info) return E_INVALID_ARGUMENT;
    if (!g->fabric[0]) return E_NOT_SUPPORTED;
    const char *p = g->fabric;
    unsigned char uuid[16];
    int n = 0;
    for (; *p && *p != ':'; p++) {
        if (*p == '-') continue;
        int hi = hexval(*p), lo = p[1] ? hexval(p[1]) : -1;
        if (hi < 0 || lo < 0 || n >= 16) return E_UNKNOWN;
        uuid[n++] = (unsigned char)(hi << 4 | lo);
        p++;
    }
    unsigned clique = 0, state = 0;
    if (n != 16 || *p != ':' || sscanf(p + 1, "%u:%u", &clique, &state) != 2 || state > 3) return E_UNKNOWN;
    memcpy(info->clusterUuid, uuid, 16);
    info->status = OK;
    info->cliqueId = clique;
    info->state = state;
    return OK;
}

API int nvmlDeviceGetSerial(void *d, char *buf, unsigned n)
{
    DEVICE("nvmlDeviceGetSerial", d);
    return g->serial[0] ? put(buf, n, g->serial) : E_NOT_SUPPORTED;
}

API int nvmlDeviceGetIndex(void *d, unsigned *out)
{
    DEVICE("nvmlDeviceGetIndex", d);
    if (!out) return E_INVALID_ARGUMENT;
    *out = h->g;
    return OK;
}

API int nvmlDeviceGetMinorNumber(void *d, unsigned *out)
{
    DEVICE("nvmlDeviceGetMinorNumber", d);
    if (!out) return E_INVALID_ARGUMENT;
    if (h->kind != 1) return E_NOT_SUPPORTED;
    *out = g->minor;
    return OK;
}

API int nvmlDeviceGetPciInfo_v3(void *d, pci_info_t *p)
{
    DEVICE("nvmlDeviceGetPciInfo_v3", d);
    unsigned dom, bus, dev, fn;
    if (!p) return E_INVALID_ARGUMENT;
    if (sscanf(g->bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return E_UNKNOWN;
    memset(p, 0, sizeof *p);
    snprintf(p->busId, sizeof p->busId, "%.31s", g->bus_id);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", dom & 0xffff, bus, dev, fn);
    p->domain = dom, p->bus = bus, p->device = dev;
    p->pciDeviceId = g->pci_device_id, p->pciSubSystemId = g->pci_subsystem_id;
    return OK;
}
API int nvmlDeviceGetPciInfo_v2(void *d, pci_info_t *p) { return nvmlDeviceGetPciInfo_v3(d, p); }

API int nvmlDeviceGetPersistenceMode(void *d, int *mode)
{
    DEVICE("nvmlDeviceGetPersistenceMode", d);
    if (!mode) return E_INVALID_ARGUMENT;
    *mode = g->persistence;
    return OK;
}

API int nvmlDeviceGetCpuAffinity(void *d, unsigned n, unsigned long *set)
{
    DEVICE("nvmlDeviceGetCpuAffinity", d);
    if (!set || !n) return E_INVALID_ARGUMENT;
    if (!g->cpus[0]) return E_NOT_SUPPORTED;
    memset(set, 0, n * sizeof *set);
    const char *s = g->cpus;
    while (*s) {  /* 0-55,112-167 */
        char *end;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (end == s) return E_UNKNOWN;
        if (*end == '-') { s = end + 1; b = strtoul(s, &end, 10); if (end == s || b < a) return E_UNKNOWN; }
        for (unsigned long c = a; c <= b && c / 64 < n; c++) set[c / 64] |= 1UL << (c % 64);
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return E_UNKNOWN;
    }
    return OK;
}
API int nvmlDeviceGetCpuAffinityWithinScope(void *d, unsigned n, unsigned long *set, unsigned scope)
{
    (void)scope;  /* recorded affinity is the NUMA-node scope; socket scope is not recorded */
    return nvmlDeviceGetCpuAffinity(d, n, set);
}

API int nvmlDeviceGetNumaNodeId(void *d, unsigned *node)
{
    DEVICE("nvmlDeviceGetNumaNodeId", d);
    (void)node;
    return E_NOT_SUPPORTED;  /* GPU memory is not a NUMA node on x86 PCIe/SXM boards */
}
