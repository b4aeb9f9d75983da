/* SPDX-License-Identifier: Apache-2.0 */
/* Served NVML device calls: memory, utilisation, energy, compute mode, processes, accounting, ECC,
 * retired pages and row remapping. */
#define _GNU_SOURCE
#include <string.h>

#include "standin_api.h"

static const struct profile *mig_profile(const struct gpu *g, const handle_t *h)
{
    return h->kind == 2 ? &N.profiles[g->gis[h->gi].profile] : NULL;
}

API int nvmlDeviceGetMemoryInfo(void *d, memory_t *m)
{
    DEVICE("nvmlDeviceGetMemoryInfo", d);
    if (!m) return E_INVALID_ARGUMENT;
    const struct profile *p = mig_profile(g, h);
    unsigned long long mib = 1ULL << 20;
    m->total = p ? p->mem_mb * mib : g->mem_total_mib * mib;
    m->used = p ? 0 : (g->mem_used_mib + g->mem_reserved_mib) * mib;  /* v1 counts reserved as used */
    m->free = m->total - m->used;
    return OK;
}

API int nvmlDeviceGetMemoryInfo_v2(void *d, memory_v2_t *m)
{
    DEVICE("nvmlDeviceGetMemoryInfo_v2", d);
    if (!m) return E_INVALID_ARGUMENT;
    if (m->version != 0x02000028) return E_VERSION_MISMATCH;
    const struct profile *p = mig_profile(g, h);
    unsigned long long mib = 1ULL << 20;
    m->total = p ? p->mem_mb * mib : g->mem_total_mib * mib;
    m->reserved = p ? 0 : g->mem_reserved_mib * mib;
    m->used = p ? 0 : g->mem_used_mib * mib;
    m->free = m->total - m->reserved - m->used;
    return OK;
}

API int nvmlDeviceGetUtilizationRates(void *d, utilization_t *u)
{
    DEVICE("nvmlDeviceGetUtilizationRates", d);
    if (!u) return E_INVALID_ARGUMENT;
    if (h->kind != 1) return E_NOT_SUPPORTED;  /* as on real MIG devices */
    u->gpu = g->util_gpu, u->memory = g->util_mem;
    return OK;
}

API int nvmlDeviceGetTotalEnergyConsumption(void *d, unsigned long long *mj)
{
    DEVICE("nvmlDeviceGetTotalEnergyConsumption", d);
    if (!mj) return E_INVALID_ARGUMENT;
    if (h->kind != 1) return E_NOT_SUPPORTED;
    unsigned long long now = now_ms(), e = g->energy_mj;
    if (g->energy_epoch_ms && now > g->energy_epoch_ms) e += g->power_mw * (now - g->energy_epoch_ms) / 1000;
    *mj = e;  /* the recorded counter plus the recorded average power since the state was written */
    return OK;
}

API int nvmlDeviceGetComputeMode(void *d, int *mode)
{
    DEVICE("nvmlDeviceGetComputeMode", d);
    if (!mode) return E_INVALID_ARGUMENT;
    *mode = g->compute_mode;
    return OK;
}

API int nvmlDeviceSetComputeMode(void *d, int mode)
{
    WRITE_DEVICE("nvmlDeviceSetComputeMode", d);
    if (mode != 0 && mode != 2 && mode != 3) {  /* EXCLUSIVE_THREAD (1) was removed from NVML */
        state_commit_unlock(fd, 0);
        return E_INVALID_ARGUMENT;
    }
    g->compute_mode = mode;
    return state_commit_unlock(fd, 1);
}

API int nvmlDeviceGetEccMode(void *d, int *current, int *pending)
{
    DEVICE("nvmlDeviceGetEccMode", d);
    if (!current || !pending) return E_INVALID_ARGUMENT;
    *current = *pending = g->ecc;
    return OK;
}

/* errorType 0 corrected / 1 uncorrected, counterType 0 volatile / 1 aggregate */
static int ecc(struct gpu *g, unsigned type, unsigned counter, unsigned long long *out)
{
    if (!out || type > 1 || counter > 1) return E_INVALID_ARGUMENT;
    if (!g->ecc) return E_NOT_SUPPORTED;
    *out = counter ? (type ? g->ecc_agg_unc : g->ecc_agg_corr) : (type ? g->ecc_vol_unc : g->ecc_vol_corr);
    return OK;
}

API int nvmlDeviceGetTotalEccErrors(void *d, unsigned type, unsigned counter, unsigned long long *out)
{
    DEVICE("nvmlDeviceGetTotalEccErrors", d);
    return ecc(g, type, counter, out);
}

API int nvmlDeviceGetMemoryErrorCounter(void *d, unsigned type, unsigned counter, unsigned location,
                                        unsigned long long *out)
{
    DEVICE("nvmlDeviceGetMemoryErrorCounter", d);
    if (location > 7) return E_INVALID_ARGUMENT;
    rc = ecc(g, type, counter, out);
    if (rc == OK && location != 2) *out = 0;  /* all recorded errors are in device memory (DRAM, 2) */
    return rc;
}

static int pages(void *d, unsigned cause, unsigned *count, unsigned long long *addrs, unsigned long long *times,
                 const char *sym)
{
    DEVICE(sym, d);
    if (!count || cause > 1) return E_INVALID_ARGUMENT;
    if (!g->pages_supported) return E_NOT_SUPPORTED;
    unsigned n = cause ? g->n_dbe : g->n_sbe;
    const unsigned long long *src = cause ? g->dbe : g->sbe;
    if (!addrs || *count < n) { *count = n; return n ? E_INSUFFICIENT_SIZE : OK; }
    for (unsigned i = 0; i < n; i++) {
        addrs[i] = src[i];
        if (times) times[i] = 0;
    }
    *count = n;
    return OK;
}
API int nvmlDeviceGetRetiredPages(void *d, unsigned cause, unsigned *count, unsigned long long *addrs)
{
    return pages(d, cause, count, addrs, NULL, "nvmlDeviceGetRetiredPages");
}
API int nvmlDeviceGetRetiredPages_v2(void *d, unsigned cause, unsigned *count, unsigned long long *addrs,
                                     unsigned long long *times)
{
    return pages(d, cause, count, addrs, times, "nvmlDeviceGetRetiredPages_v2");
}

API int nvmlDeviceGetRetiredPagesPendingStatus(void *d, int *pending)
{
    DEVICE("nvmlDeviceGetRetiredPagesPendingStatus", d);
    if (!pending) return E_INVALID_ARGUMENT;
    if (!g->pages_supported) return E_NOT_SUPPORTED;
    *pending = g->pages_pending;
    return OK;
}

API int nvmlDeviceGetRemappedRows(void *d, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failure)
{
    DEVICE("nvmlDeviceGetRemappedRows", d);
    if (!corr || !unc || !pending || !failure) return E_INVALID_ARGUMENT;
    if (!g->remap_supported) return E_NOT_SUPPORTED;
    *corr = g->remap_corr, *unc = g->remap_unc, *pending = g->remap_pending, *failure = g->remap_failure;
    return OK;
}

/* Recorded processes that are still alive (a killed pid disappears, as on a real GPU). */
static int processes(void *d, unsigned *count, proc_t *out, const char *sym)
{
    DEVICE(sym, d);
    if (!count) return E_INVALID_ARGUMENT;
    unsigned n = 0;
    for (unsigned i = 0; i < g->nprocs; i++) {
        const struct proc *p = &g->procs[i];
        if (!proc_alive(p->pid) || (h->kind == 2 && (p->gi != h->gi || p->ci != h->ci))) continue;
        if (out && n < *count)
            out[n] = (proc_t){p->pid, p->used_mib << 20, g->mig_current ? p->gi : 0xFFFFFFFFu,
                              g->mig_current ? p->ci : 0xFFFFFFFFu};
        n++;
    }
    int rc2 = (!out && n) || (out && n > *count) ? E_INSUFFICIENT_SIZE : OK;
    *count = n;
    return rc2;
}
API int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *count, proc_t *out)
{
    return processes(d, count, out, "nvmlDeviceGetComputeRunningProcesses_v3");
}
API int nvmlDeviceGetComputeRunningProcesses_v2(void *d, unsigned *count, proc_t *out)
{
    return processes(d, count, out, "nvmlDeviceGetComputeRunningProcesses_v2");
}

API int nvmlDeviceGetAccountingMode(void *d, int *mode)
{
    DEVICE("nvmlDeviceGetAccountingMode", d);
    if (!mode) return E_INVALID_ARGUMENT;
    *mode = g->accounting;
    return OK;
}

API int nvmlDeviceSetAccountingMode(void *d, int mode)
{
    WRITE_DEVICE("nvmlDeviceSetAccountingMode", d);
    if (mode != 0 && mode != 1) { state_commit_unlock(fd, 0); return E_INVALID_ARGUMENT; }
    g->accounting = mode;
    return state_commit_unlock(fd, 1);
}

API int nvmlDeviceClearAccountingPids(void *d)
{
    WRITE_DEVICE("nvmlDeviceClearAccountingPids", d);
    g->nacct = 0;
    return state_commit_unlock(fd, 1);
}

API int nvmlDeviceGetAccountingBufferSize(void *d, unsigned *size)
{
    DEVICE("nvmlDeviceGetAccountingBufferSize", d);
    if (!size) return E_INVALID_ARGUMENT;
    if (!g->accounting) return E_NOT_SUPPORTED;
    *size = 4000;  /* accounting_mode_buffer_size in the recorded nvidia-smi -q */
    return OK;
}

API int nvmlDeviceGetAccountingPids(void *d, unsigned *count, unsigned *pids)
{
    DEVICE("nvmlDeviceGetAccountingPids", d);
    if (!count) return E_INVALID_ARGUMENT;
    if (!g->accounting) return E_NOT_SUPPORTED;
    if (!pids || *count < g->nacct) { *count = g->nacct; return E_INSUFFICIENT_SIZE; }
    for (unsigned i = 0; i < g->nacct; i++) pids[i] = g->accts[i].pid;
    *count = g->nacct;
    return OK;
}

API int nvmlDeviceGetAccountingStats(void *d, unsigned pid, acct_stats_t *s)
{
    DEVICE("nvmlDeviceGetAccountingStats", d);
    if (!s) return E_INVALID_ARGUMENT;
    if (!g->accounting) return E_NOT_SUPPORTED;
    for (unsigned i = 0; i < g->nacct; i++) {
        const struct acct *a = &g->accts[i];
        if (a->pid != pid) continue;
        memset(s, 0, sizeof *s);
        s->gpuUtilization = a->gpu_util, s->memoryUtilization = a->mem_util;
        s->maxMemoryUsage = a->max_mem_mib << 20, s->time = a->time_ms, s->startTime = a->start_us;
        s->isRunning = proc_alive(pid);
        return OK;
    }
    return E_NOT_FOUND;
}
