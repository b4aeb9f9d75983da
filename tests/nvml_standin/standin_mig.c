/* SPDX-License-Identifier: Apache-2.0 */
/* Served NVML MIG calls: MIG mode, GPU instances (placements in memory slices), compute instances,
 * MIG device handles with MIG-<uuid> UUIDs. Profiles come from the state file (`nvidia-smi mig -lgip`). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "standin_api.h"

static const unsigned CI_SLICES[] = {1, 2, 3, 4, 7};  /* NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE */

#define GI(sym, p, write)                                                   \
    int fd = -1, rc;                                                        \
    if (write) { fd = enter_write(sym); if (fd < 0) return -fd; rc = OK; }  \
    else if ((rc = enter(sym))) return rc;                                  \
    handle_t *h = as(p, 3);                                                 \
    if (!h || N.gpus[h->g].lost) {                                          \
        if (fd >= 0) state_commit_unlock(fd, 0);                            \
        return h ? E_GPU_IS_LOST : E_INVALID_ARGUMENT;                      \
    }                                                                       \
    struct gpu *g = &N.gpus[h->g];                                          \
    const struct profile *gp = &N.profiles[g->gis[h->gi].profile]

#define FAIL(code) do { if (fd >= 0) state_commit_unlock(fd, 0); return (code); } while (0)

static int physical(void *d, struct gpu **g)
{
    handle_t *h = as(d, 1);
    if (!h) return E_INVALID_ARGUMENT;
    *g = &N.gpus[h->g];
    if ((*g)->lost) return E_GPU_IS_LOST;
    return (*g)->mig_capable ? OK : E_NOT_SUPPORTED;
}

API int nvmlDeviceGetMigMode(void *d, unsigned *current, unsigned *pending)
{
    struct gpu *g;
    int rc = enter("nvmlDeviceGetMigMode");
    if (rc || (rc = physical(d, &g))) return rc;
    if (!current || !pending) return E_INVALID_ARGUMENT;
    *current = g->mig_current, *pending = g->mig_pending;
    return OK;
}

static int has_instances(const struct gpu *g)
{
    for (int i = 0; i < MAX_GI; i++)
        if (g->gis[i].used) return 1;
    return 0;
}

/* Returns the call's status; the activation status (IN_USE while processes run or the gpu_busy switch
 * is on, as nvml.h documents) goes to *activation and leaves the mode pending. */
API int nvmlDeviceSetMigMode(void *d, unsigned mode, int *activation)
{
    int fd = enter_write("nvmlDeviceSetMigMode");
    if (fd < 0) return -fd;
    struct gpu *g;
    int rc = physical(d, &g);
    if (rc) FAIL(rc);
    if (mode > 1 || !activation) FAIL(E_INVALID_ARGUMENT);
    g->mig_pending = mode;
    if (busy(g) || switch_on("gpu_busy") || (!mode && has_instances(g))) {
        *activation = E_IN_USE;
    } else {
        g->mig_current = mode;
        *activation = OK;
    }
    return state_commit_unlock(fd, 1);
}

static int gi_profile(void *d, unsigned profile, const struct profile **p, const char *sym)
{
    struct gpu *g;
    int rc = enter(sym);
    if (rc || (rc = physical(d, &g))) return rc;
    if (profile >= 0x12) return E_INVALID_ARGUMENT;  /* NVML_GPU_INSTANCE_PROFILE_COUNT */
    if (profile >= MAX_PROFILES) return E_NOT_SUPPORTED;
    *p = &N.profiles[profile];
    return (*p)->present ? OK : E_NOT_SUPPORTED;
}

API int nvmlDeviceGetGpuInstanceProfileInfo(void *d, unsigned profile, gi_profile_t *info)
{
    const struct profile *p;
    int rc = gi_profile(d, profile, &p, "nvmlDeviceGetGpuInstanceProfileInfo");
    if (rc) return rc;
    if (!info) return E_INVALID_ARGUMENT;
    *info = (gi_profile_t){p->id, 0, p->slices, p->count, p->sm, p->ce, p->dec, p->enc, p->jpeg, p->ofa, p->mem_mb};
    return OK;
}

API int nvmlDeviceGetGpuInstanceProfileInfoV(void *d, unsigned profile, gi_profile_v2_t *info)
{
    const struct profile *p;
    int rc = gi_profile(d, profile, &p, "nvmlDeviceGetGpuInstanceProfileInfoV");
    if (rc) return rc;
    if (!info) return E_INVALID_ARGUMENT;
    if (info->version != 0x02000098) return E_VERSION_MISMATCH;
    *info = (gi_profile_v2_t){0x02000098, p->id, 0, p->slices, p->count, p->sm, p->ce, p->dec, p->enc, p->jpeg,
                              p->ofa, p->mem_mb, ""};
    snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    return OK;
}

static int placement_free(const struct gpu *g, const struct profile *p, unsigned start)
{
    for (int i = 0; i < MAX_GI; i++) {
        if (!g->gis[i].used) continue;
        unsigned s = g->gis[i].start, e = s + N.profiles[g->gis[i].profile].mem_slices;
        if (start < e && s < start + p->mem_slices) return 0;
    }
    return 1;
}

static unsigned instances_of(const struct gpu *g, unsigned index)
{
    unsigned n = 0;
    for (int i = 0; i < MAX_GI; i++) n += g->gis[i].used && g->gis[i].profile == index;
    return n;
}

API int nvmlDeviceGetGpuInstancePossiblePlacements_v2(void *d, unsigned id, placement_t *out, unsigned *count)
{
    struct gpu *g;
    unsigned idx;
    int rc = enter("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    if (rc || (rc = physical(d, &g))) return rc;
    const struct profile *p = profile_by_id(id, &idx);
    if (!p || !count) return E_INVALID_ARGUMENT;
    if (out)
        for (unsigned i = 0; i < p->nplace && i < *count; i++) out[i] = (placement_t){p->place[i], p->mem_slices};
    *count = p->nplace;
    return OK;
}

API int nvmlDeviceGetGpuInstanceRemainingCapacity(void *d, unsigned id, unsigned *count)
{
    struct gpu *g;
    unsigned idx;
    int rc = enter("nvmlDeviceGetGpuInstanceRemainingCapacity");
    if (rc || (rc = physical(d, &g))) return rc;
    const struct profile *p = profile_by_id(id, &idx);
    if (!p || !count) return E_INVALID_ARGUMENT;
    if (!g->mig_current) return E_NOT_SUPPORTED;
    unsigned n = 0, taken = instances_of(g, idx);
    for (unsigned i = 0; i < p->nplace; i++) n += placement_free(g, p, p->place[i]);
    *count = taken >= p->count ? 0 : (n < p->count - taken ? n : p->count - taken);
    return OK;
}

/* The GPU-instance id the driver gives a placement: fixed by the block of memory slices it covers, not by
 * creation order (docs/nvml_standin.md "GPU-instance ids"): the whole GPU 0; the half at slice 4 is 1, at 0 is 2;
 * quarters 3 + start/2; eighths 7 + start. Public captures: seven 1g.10gb on an H100 got ids 7..13 at
 * placements 0..6 (in creation order 13, 11, 12, 7, 8, 9, 10); two 3g.20gb on an A100 got 1 at 4:4 and 2 at 0:4
 * (NVIDIA MIG user guide). */
static unsigned gi_id(const struct profile *p, unsigned start)
{
    switch (p->mem_slices) {
    case 8: return 0;
    case 4: return start >= 4 ? 1 : 2;
    case 2: return 3 + start / 2;
    default: return 7 + start;
    }
}

static int create_gi(void *d, unsigned id, const placement_t *want, void **out, const char *sym)
{
    int fd = enter_write(sym);
    if (fd < 0) return -fd;
    struct gpu *g;
    unsigned idx;
    int rc = physical(d, &g);
    if (rc) FAIL(rc);
    const struct profile *p = profile_by_id(id, &idx);
    if (!p || !out) FAIL(E_INVALID_ARGUMENT);
    if (!g->mig_current) FAIL(E_NOT_SUPPORTED);
    if (instances_of(g, idx) >= p->count) FAIL(E_INSUFFICIENT_RESOURCES);
    int start = -1;
    for (unsigned i = 0; i < p->nplace && start < 0; i++)
        if ((!want || want->start == p->place[i]) && placement_free(g, p, p->place[i])) start = p->place[i];
    if (start < 0) FAIL(want ? E_INVALID_ARGUMENT : E_INSUFFICIENT_RESOURCES);
    unsigned gi = gi_id(p, (unsigned)start);
    if (gi >= MAX_GI || g->gis[gi].used) FAIL(E_INSUFFICIENT_RESOURCES);
    g->gis[gi] = (struct gi){1, idx, (unsigned)start};
    *out = &H_gi[g - N.gpus][gi];
    return state_commit_unlock(fd, 1);
}

API int nvmlDeviceCreateGpuInstance(void *d, unsigned id, void **out)
{
    return create_gi(d, id, NULL, out, "nvmlDeviceCreateGpuInstance");
}

API int nvmlDeviceCreateGpuInstanceWithPlacement(void *d, unsigned id, const placement_t *pl, void **out)
{
    if (!pl) return E_INVALID_ARGUMENT;
    return create_gi(d, id, pl, out, "nvmlDeviceCreateGpuInstanceWithPlacement");
}

API int nvmlDeviceGetGpuInstances(void *d, unsigned id, void **out, unsigned *count)
{
    struct gpu *g;
    unsigned idx;
    int rc = enter("nvmlDeviceGetGpuInstances");
    if (rc || (rc = physical(d, &g))) return rc;
    if (!profile_by_id(id, &idx) || !out || !count) return E_INVALID_ARGUMENT;
    if (!g->mig_current) return E_NOT_SUPPORTED;
    unsigned n = 0;
    for (int i = 0; i < MAX_GI; i++)
        if (g->gis[i].used && g->gis[i].profile == idx) out[n++] = &H_gi[g - N.gpus][i];
    *count = n;
    return OK;
}

API int nvmlDeviceGetGpuInstanceById(void *d, unsigned id, void **out)
{
    struct gpu *g;
    int rc = enter("nvmlDeviceGetGpuInstanceById");
    if (rc || (rc = physical(d, &g))) return rc;
    if (!out || id >= MAX_GI) return E_INVALID_ARGUMENT;
    if (!g->mig_current) return E_NOT_SUPPORTED;
    if (!g->gis[id].used) return E_NOT_FOUND;
    *out = &H_gi[g - N.gpus][id];
    return OK;
}

API int nvmlGpuInstanceGetInfo(void *p, gi_info_t *info)
{
    GI("nvmlGpuInstanceGetInfo", p, 0);
    if (!info) return E_INVALID_ARGUMENT;
    *info = (gi_info_t){&H_gpu[h->g], h->gi, gp->id, {g->gis[h->gi].start, gp->mem_slices}};
    return OK;
}

static int procs_on(const struct gpu *g, unsigned gi, int ci)
{
    for (unsigned i = 0; i < g->nprocs; i++)
        if (g->procs[i].gi == gi && (ci < 0 || g->procs[i].ci == (unsigned)ci) && proc_alive(g->procs[i].pid))
            return 1;
    return 0;
}

API int nvmlGpuInstanceDestroy(void *p)
{
    GI("nvmlGpuInstanceDestroy", p, 1);
    (void)gp;
    for (int ci = 0; ci < MAX_CI; ci++)
        if (g->cis[h->gi][ci].used) FAIL(E_IN_USE);
    if (procs_on(g, h->gi, -1)) FAIL(E_IN_USE);
    g->gis[h->gi].used = 0;
    return state_commit_unlock(fd, 1);
}

static int ci_profile(const struct profile *gp, unsigned profile, unsigned *slices)
{
    if (profile >= 9) return E_INVALID_ARGUMENT;
    if (profile >= 5 || CI_SLICES[profile] > gp->slices) return E_NOT_SUPPORTED;
    *slices = CI_SLICES[profile];
    return OK;
}

static void ci_name(char *out, size_t n, const struct profile *gp, unsigned c)
{
    if (c == gp->slices) snprintf(out, n, "MIG %s", gp->name);
    else snprintf(out, n, "MIG %uc.%s", c, gp->name);
}

API int nvmlGpuInstanceGetComputeInstanceProfileInfo(void *p, unsigned profile, unsigned eng, ci_profile_t *info)
{
    GI("nvmlGpuInstanceGetComputeInstanceProfileInfo", p, 0);
    unsigned c;
    if (eng != 0 || !info) return E_INVALID_ARGUMENT;
    if ((rc = ci_profile(gp, profile, &c))) return rc;
    *info = (ci_profile_t){profile, c, gp->slices / c, gp->sm * c / gp->slices, gp->ce, gp->dec, gp->enc,
                           gp->jpeg, gp->ofa};
    return OK;
}

API int nvmlGpuInstanceGetComputeInstanceProfileInfoV(void *p, unsigned profile, unsigned eng, ci_profile_v2_t *info)
{
    GI("nvmlGpuInstanceGetComputeInstanceProfileInfoV", p, 0);
    unsigned c;
    if (eng != 0 || !info) return E_INVALID_ARGUMENT;
    if (info->version != 0x02000088) return E_VERSION_MISMATCH;
    if ((rc = ci_profile(gp, profile, &c))) return rc;
    *info = (ci_profile_v2_t){0x02000088, profile, c, gp->slices / c, gp->sm * c / gp->slices, gp->ce, gp->dec,
                              gp->enc, gp->jpeg, gp->ofa, ""};
    ci_name(info->name, sizeof info->name, gp, c);
    return OK;
}

static unsigned used_slices(const struct gpu *g, unsigned gi)
{
    unsigned n = 0;
    for (int ci = 0; ci < MAX_CI; ci++)
        if (g->cis[gi][ci].used) n += CI_SLICES[g->cis[gi][ci].profile];
    return n;
}

API int nvmlGpuInstanceGetComputeInstanceRemainingCapacity(void *p, unsigned profile, unsigned *count)
{
    GI("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", p, 0);
    unsigned c;
    if (!count) return E_INVALID_ARGUMENT;
    if ((rc = ci_profile(gp, profile, &c))) return rc;
    *count = (gp->slices - used_slices(g, h->gi)) / c;
    return OK;
}

static unsigned long long fnv(const char *s, unsigned long long hsh)
{
    for (; *s; s++) hsh = (hsh ^ (unsigned char)*s) * 0x100000001b3ULL;
    return hsh;
}

API int nvmlGpuInstanceCreateComputeInstance(void *p, unsigned profile, void **out)
{
    GI("nvmlGpuInstanceCreateComputeInstance", p, 1);
    unsigned c;
    if (!out) FAIL(E_INVALID_ARGUMENT);
    if ((rc = ci_profile(gp, profile, &c))) FAIL(rc);
    if (used_slices(g, h->gi) + c > gp->slices) FAIL(E_INSUFFICIENT_RESOURCES);
    unsigned ci = 0;
    while (ci < MAX_CI && g->cis[h->gi][ci].used) ci++;
    if (ci == MAX_CI) FAIL(E_INSUFFICIENT_RESOURCES);
    char seed[TEXT + 48];
    snprintf(seed, sizeof seed, "%s/%u/%u/%u", g->uuid, h->gi, ci, ++N.mig_serial);
    unsigned long long a = fnv(seed, 0xcbf29ce484222325ULL), b = fnv(seed, a ^ 0x9e3779b97f4a7c15ULL);
    struct ci *x = &g->cis[h->gi][ci];
    x->used = 1, x->profile = profile;
    snprintf(x->uuid, sizeof x->uuid, "MIG-%08llx-%04llx-%04llx-%04llx-%012llx", a >> 32, (a >> 16) & 0xffff,
             0x4000 | (a & 0x0fff), 0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
    *out = &H_ci[h->g][h->gi][ci];
    return state_commit_unlock(fd, 1);
}

API int nvmlGpuInstanceGetComputeInstances(void *p, unsigned profile, void **out, unsigned *count)
{
    GI("nvmlGpuInstanceGetComputeInstances", p, 0);
    unsigned c, n = 0;
    if (!out || !count) return E_INVALID_ARGUMENT;
    if ((rc = ci_profile(gp, profile, &c))) return rc;
    for (unsigned ci = 0; ci < MAX_CI; ci++)
        if (g->cis[h->gi][ci].used && g->cis[h->gi][ci].profile == profile) out[n++] = &H_ci[h->g][h->gi][ci];
    *count = n;
    return OK;
}

API int nvmlGpuInstanceGetComputeInstanceById(void *p, unsigned id, void **out)
{
    GI("nvmlGpuInstanceGetComputeInstanceById", p, 0);
    (void)gp;
    if (!out || id >= MAX_CI) return E_INVALID_ARGUMENT;
    if (!g->cis[h->gi][id].used) return E_NOT_FOUND;
    *out = &H_ci[h->g][h->gi][id];
    return OK;
}

static handle_t *ci_handle(void *p, int *rc)
{
    handle_t *h = as(p, 4);
    *rc = !h ? E_INVALID_ARGUMENT : N.gpus[h->g].lost ? E_GPU_IS_LOST : OK;
    return *rc ? NULL : h;
}

API int nvmlComputeInstanceGetInfo_v2(void *p, ci_info_t *info)
{
    int rc = enter("nvmlComputeInstanceGetInfo_v2");
    if (rc) return rc;
    handle_t *h = ci_handle(p, &rc);
    if (!h) return rc;
    if (!info) return E_INVALID_ARGUMENT;
    const struct gpu *g = &N.gpus[h->g];
    unsigned start = 0;
    for (unsigned ci = 0; ci < h->ci; ci++)
        if (g->cis[h->gi][ci].used) start += CI_SLICES[g->cis[h->gi][ci].profile];
    unsigned prof = g->cis[h->gi][h->ci].profile;
    *info = (ci_info_t){&H_gpu[h->g], &H_gi[h->g][h->gi], h->ci, prof, {start, CI_SLICES[prof]}};
    return OK;
}

API int nvmlComputeInstanceDestroy(void *p)
{
    int fd = enter_write("nvmlComputeInstanceDestroy"), rc;
    if (fd < 0) return -fd;
    handle_t *h = ci_handle(p, &rc);
    if (!h) FAIL(rc);
    struct gpu *g = &N.gpus[h->g];
    if (procs_on(g, h->gi, (int)h->ci)) FAIL(E_IN_USE);
    g->cis[h->gi][h->ci].used = 0;
    return state_commit_unlock(fd, 1);
}

API int nvmlDeviceGetMaxMigDeviceCount(void *d, unsigned *count)
{
    struct gpu *g;
    int rc = enter("nvmlDeviceGetMaxMigDeviceCount");
    if (rc || (rc = physical(d, &g))) return rc;
    if (!count) return E_INVALID_ARGUMENT;
    *count = 0;
    for (int i = 0; i < MAX_PROFILES; i++)
        if (N.profiles[i].present && N.profiles[i].count > *count) *count = N.profiles[i].count;
    return OK;
}

API int nvmlDeviceGetMigDeviceHandleByIndex(void *d, unsigned index, void **out)
{
    struct gpu *g;
    int rc = enter("nvmlDeviceGetMigDeviceHandleByIndex");
    if (rc || (rc = physical(d, &g))) return rc;
    if (!out) return E_INVALID_ARGUMENT;
    if (!g->mig_current) return E_NOT_SUPPORTED;
    unsigned n = 0;
    for (unsigned gi = 0; gi < MAX_GI; gi++)
        for (unsigned ci = 0; ci < MAX_CI; ci++)
            if (g->gis[gi].used && g->cis[gi][ci].used && n++ == index) {
                *out = &H_mig[g - N.gpus][gi][ci];
                return OK;
            }
    return E_NOT_FOUND;
}

API int nvmlDeviceIsMigDeviceHandle(void *d, unsigned *is_mig)
{
    DEVICE("nvmlDeviceIsMigDeviceHandle", d);
    if (!is_mig) return E_INVALID_ARGUMENT;
    *is_mig = h->kind == 2;
    return OK;
}

API int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(void *d, void **out)
{
    DEVICE("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", d);
    if (!out || h->kind != 2) return E_INVALID_ARGUMENT;
    *out = &H_gpu[h->g];
    (void)g;
    return OK;
}

API int nvmlDeviceGetGpuInstanceId(void *d, unsigned *id)
{
    DEVICE("nvmlDeviceGetGpuInstanceId", d);
    if (!id) return E_INVALID_ARGUMENT;
    if (h->kind != 2) return E_NOT_SUPPORTED;
    *id = h->gi;
    return OK;
}

API int nvmlDeviceGetComputeInstanceId(void *d, unsigned *id)
{
    DEVICE("nvmlDeviceGetComputeInstanceId", d);
    if (!id) return E_INVALID_ARGUMENT;
    if (h->kind != 2) return E_NOT_SUPPORTED;
    *id = h->ci;
    return OK;
}
