/* SPDX-License-Identifier: Apache-2.0 */
/* Served NVML calls that Slurm's gpu/nvml plugin makes beyond identity and MIG: NVLink lanes (state and
 * remote PCI bus id: gres.conf Links=), MIG device attributes (the profile name Slurm 22.05 builds) and the
 * applications clocks (--gpu-freq). Every value comes from the state file (docs/nvml_standin.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "standin_api.h"

typedef struct { unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount,
                 sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
                 unsigned long long memorySizeMB; } attributes_t;  /* nvmlDeviceAttributes_t (nvml.h) */

enum { CLOCK_GRAPHICS = 0, CLOCK_SM = 1, CLOCK_MEM = 2, CLOCK_VIDEO = 3 };  /* nvmlClockType_t */

/* nvml.h: NVLink queries on a lane the GPU does not have -> INVALID_ARGUMENT; on a board without NVLink
 * (and on MIG device handles: "MIG does not support NVLinks") -> NOT_SUPPORTED. Slurm stops at the first
 * NOT_SUPPORTED and skips INVALID_ARGUMENT lanes (gpu_nvml.c _nvml_get_nvlink_info). */
static int lane(const struct gpu *g, const handle_t *h, unsigned link)
{
    if (h->kind != 1 || !g->nlinks) return E_NOT_SUPPORTED;
    return link < g->nlinks ? OK : E_INVALID_ARGUMENT;
}

API int nvmlDeviceGetNvLinkState(void *d, unsigned link, int *active)
{
    DEVICE("nvmlDeviceGetNvLinkState", d);
    if (!active) return E_INVALID_ARGUMENT;
    if ((rc = lane(g, h, link))) return rc;
    *active = g->links[link][0] != 0;  /* NVML_FEATURE_ENABLED = 1 */
    return OK;
}

API int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *d, unsigned link, pci_info_t *p)
{
    DEVICE("nvmlDeviceGetNvLinkRemotePciInfo_v2", d);
    if (!p) return E_INVALID_ARGUMENT;
    if ((rc = lane(g, h, link))) return rc;
    if (!g->links[link][0]) return E_NOT_FOUND;  /* inactive lane: no remote end */
    unsigned dom, bus, dev, fn;
    if (sscanf(g->links[link], "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return E_UNKNOWN;
    memset(p, 0, sizeof *p);
    snprintf(p->busId, sizeof p->busId, "%.31s", g->links[link]);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", dom & 0xffff, bus, dev, fn);
    p->domain = dom, p->bus = bus, p->device = dev;
    return OK;
}
API int nvmlDeviceGetNvLinkRemotePciInfo(void *d, unsigned link, pci_info_t *p)
{
    return nvmlDeviceGetNvLinkRemotePciInfo_v2(d, link, p);
}

/* MIG device handle: its GPU instance's profile (slices, memory, engines) and its compute instance's slices.
 * A physical GPU: NOT_SUPPORTED (the whole-GPU attributes are not recorded; Slurm asks only MIG devices). */
API int nvmlDeviceGetAttributes_v2(void *d, attributes_t *a)
{
    DEVICE("nvmlDeviceGetAttributes_v2", d);
    if (!a) return E_INVALID_ARGUMENT;
    if (h->kind != 2) return E_NOT_SUPPORTED;
    const struct profile *p = &N.profiles[g->gis[h->gi].profile];
    static const unsigned ci_slices[] = {1, 2, 3, 4, 7};  /* NVML_COMPUTE_INSTANCE_PROFILE_* */
    unsigned cp = g->cis[h->gi][h->ci].profile;
    unsigned cs = cp < 5 ? ci_slices[cp] : p->slices;
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = p->slices ? p->sm * cs / p->slices : p->sm;
    a->sharedCopyEngineCount = p->ce, a->sharedDecoderCount = p->dec, a->sharedEncoderCount = p->enc;
    a->sharedJpegCount = p->jpeg, a->sharedOfaCount = p->ofa;
    a->gpuInstanceSliceCount = p->slices, a->computeInstanceSliceCount = cs;
    a->memorySizeMB = p->mem_mb;
    return OK;
}
API int nvmlDeviceGetAttributes(void *d, attributes_t *a) { return nvmlDeviceGetAttributes_v2(d, a); }

static int clocks_of(const struct gpu *g, const handle_t *h)
{
    return h->kind != 1 || !g->nmem_clocks ? E_NOT_SUPPORTED : OK;
}

API int nvmlDeviceGetSupportedMemoryClocks(void *d, unsigned *count, unsigned *mhz)
{
    DEVICE("nvmlDeviceGetSupportedMemoryClocks", d);
    if (!count) return E_INVALID_ARGUMENT;
    if ((rc = clocks_of(g, h))) return rc;
    unsigned room = *count;
    *count = g->nmem_clocks;
    if (room < g->nmem_clocks || !mhz) return E_INSUFFICIENT_SIZE;
    memcpy(mhz, g->mem_clocks, g->nmem_clocks * sizeof *mhz);
    return OK;
}

API int nvmlDeviceGetSupportedGraphicsClocks(void *d, unsigned mem, unsigned *count, unsigned *mhz)
{
    DEVICE("nvmlDeviceGetSupportedGraphicsClocks", d);
    if (!count) return E_INVALID_ARGUMENT;
    if ((rc = clocks_of(g, h))) return rc;
    for (unsigned m = 0; m < g->nmem_clocks; m++) {
        if (g->mem_clocks[m] != mem) continue;
        unsigned room = *count;
        *count = g->ngfx[m];
        if (room < g->ngfx[m] || !mhz) return E_INSUFFICIENT_SIZE;
        memcpy(mhz, g->gfx_clocks[m], g->ngfx[m] * sizeof *mhz);
        return OK;
    }
    return E_NOT_FOUND;  /* not a supported memory clock */
}

API int nvmlDeviceGetApplicationsClock(void *d, int type, unsigned *mhz)
{
    DEVICE("nvmlDeviceGetApplicationsClock", d);
    if (!mhz) return E_INVALID_ARGUMENT;
    if ((rc = clocks_of(g, h))) return rc;
    if (type == CLOCK_MEM) *mhz = g->app_mem;
    else if (type == CLOCK_GRAPHICS || type == CLOCK_SM) *mhz = g->app_gfx;
    else return E_NOT_SUPPORTED;
    return OK;
}

static int supported_pair(const struct gpu *g, unsigned mem, unsigned gfx)
{
    for (unsigned m = 0; m < g->nmem_clocks; m++)
        for (unsigned j = 0; g->mem_clocks[m] == mem && j < g->ngfx[m]; j++)
            if (g->gfx_clocks[m][j] == gfx) return 1;
    return 0;
}

API int nvmlDeviceSetApplicationsClocks(void *d, unsigned mem, unsigned gfx)
{
    WRITE_DEVICE("nvmlDeviceSetApplicationsClocks", d);
    if ((rc = clocks_of(g, h))) { state_commit_unlock(fd, 0); return rc; }
    if (!supported_pair(g, mem, gfx)) { state_commit_unlock(fd, 0); return E_INVALID_ARGUMENT; }
    g->app_mem = mem, g->app_gfx = gfx;
    return state_commit_unlock(fd, 1);
}

API int nvmlDeviceResetApplicationsClocks(void *d)
{
    WRITE_DEVICE("nvmlDeviceResetApplicationsClocks", d);
    if ((rc = clocks_of(g, h))) { state_commit_unlock(fd, 0); return rc; }
    g->app_mem = g->def_mem, g->app_gfx = g->def_gfx;
    return state_commit_unlock(fd, 1);
}

/* Slurm 24.11's gpu/nvml reads per-process usage for accounting (gpu_p_usage_read). The recording holds
 * compute processes only: no graphics process runs on a headless node's GPU. */
API int nvmlDeviceGetGraphicsRunningProcesses_v3(void *d, unsigned *count, void *out)
{
    DEVICE("nvmlDeviceGetGraphicsRunningProcesses_v3", d);
    (void)out;
    if (!count) return E_INVALID_ARGUMENT;
    *count = 0;
    return OK;
}

typedef struct { unsigned pid; unsigned long long timeStamp; unsigned smUtil, memUtil, encUtil, decUtil; }
    process_sample_t;  /* nvmlProcessUtilizationSample_t */

/* One sample per live recorded process: the GPU's recorded utilisation (the recording has no per-process
 * split), stamped now. Two-phase like NVML: no buffer -> INSUFFICIENT_SIZE with the count; none -> NOT_FOUND. */
API int nvmlDeviceGetProcessUtilization(void *d, process_sample_t *out, unsigned *count, unsigned long long since)
{
    DEVICE("nvmlDeviceGetProcessUtilization", d);
    (void)since;
    if (!count) return E_INVALID_ARGUMENT;
    unsigned n = 0;
    unsigned long long now_us = now_ms() * 1000ULL;
    for (unsigned i = 0; i < g->nprocs; i++) {
        const struct proc *p = &g->procs[i];
        if (!proc_alive(p->pid) || (h->kind == 2 && (p->gi != h->gi || p->ci != h->ci))) continue;
        if (out && n < *count) out[n] = (process_sample_t){p->pid, now_us, g->util_gpu, g->util_mem, 0, 0};
        n++;
    }
    int rc2 = !n ? E_NOT_FOUND : (!out || n > *count) ? E_INSUFFICIENT_SIZE : OK;
    *count = n;
    return rc2;
}
