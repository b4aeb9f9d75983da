/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the API files: handle tables, the nvml.h struct layouts served, entry plumbing. */
#ifndef SLURM_GPU_NVML_STANDIN_API_H
#define SLURM_GPU_NVML_STANDIN_API_H

#include "standin.h"

#define API __attribute__((visibility("default")))

typedef struct { unsigned kind, g, gi, ci; } handle_t;  /* kind: 1 GPU, 2 MIG device, 3 GPU inst., 4 compute inst. */
extern handle_t H_gpu[MAX_GPUS], H_mig[MAX_GPUS][MAX_GI][MAX_CI], H_gi[MAX_GPUS][MAX_GI],
    H_ci[MAX_GPUS][MAX_GI][MAX_CI];
extern int refcount;

typedef struct { char busIdLegacy[16]; unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
                 char busId[32]; } pci_info_t;
typedef struct { unsigned long long total, free, used; } memory_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } memory_v2_t;
typedef struct { unsigned gpu, memory; } utilization_t;
typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId; } proc_t;
typedef struct { unsigned gpuUtilization, memoryUtilization; unsigned long long maxMemoryUsage, time, startTime;
                 unsigned isRunning, reserved[5]; } acct_stats_t;
typedef struct { unsigned start, size; } placement_t;
typedef struct { unsigned id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
                 decoderCount, encoderCount, jpegCount, ofaCount; unsigned long long memorySizeMB; } gi_profile_t;
typedef struct { unsigned version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount,
                 copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount; unsigned long long memorySizeMB;
                 char name[96]; } gi_profile_v2_t;
typedef struct { void *device; unsigned id, profileId; placement_t placement; } gi_info_t;
typedef struct { unsigned id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
                 sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount; } ci_profile_t;
typedef struct { unsigned version, id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
                 sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount; char name[96]; } ci_profile_v2_t;
typedef struct { void *device, *gpuInstance; unsigned id, profileId; placement_t placement; } ci_info_t;


int enter(const char *sym);
int enter_write(const char *sym);
int put(char *buf, unsigned size, const char *s);
handle_t *as(void *p, unsigned kind);
struct gpu *device(void *p, handle_t **hout, int *rc);
unsigned long long now_ms(void);
const struct profile *profile_by_id(unsigned id, unsigned *index);
int busy(const struct gpu *g);

#define DEVICE(sym, p)                      \
    int rc = enter(sym);                    \
    if (rc) return rc;                      \
    handle_t *h = NULL;                     \
    struct gpu *g = device(p, &h, &rc);     \
    if (!g) return rc;                      \
    (void)h

#define WRITE_DEVICE(sym, p)                                  \
    int fd = enter_write(sym);                                \
    if (fd < 0) return -fd;                                   \
    int rc = OK;                                              \
    handle_t *h = NULL;                                       \
    struct gpu *g = device(p, &h, &rc);                       \
    if (!g) { state_commit_unlock(fd, 0); return rc; }        \
    (void)h

#endif
