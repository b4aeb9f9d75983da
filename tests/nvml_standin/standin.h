/* SPDX-License-Identifier: Apache-2.0 */
/* Stand-in libnvidia-ml.so.1: the node model, its state file and the failure switches.
 * The state file format is documented in docs/nvml_standin.md (line-based key=value). */
#ifndef SLURM_GPU_NVML_STANDIN_H
#define SLURM_GPU_NVML_STANDIN_H

#include <stdint.h>

/* nvmlReturn_t values (nvml.h) */
enum {
    OK = 0, E_UNINITIALIZED = 1, E_INVALID_ARGUMENT = 2, E_NOT_SUPPORTED = 3, E_NO_PERMISSION = 4,
    E_NOT_FOUND = 6, E_INSUFFICIENT_SIZE = 7, E_DRIVER_NOT_LOADED = 9, E_GPU_IS_LOST = 15,
    E_IN_USE = 19, E_INSUFFICIENT_RESOURCES = 23, E_VERSION_MISMATCH = 25, E_UNKNOWN = 999
};

#define MAX_GPUS 16
#define MAX_PROFILES 12  /* NVML_GPU_INSTANCE_PROFILE_* constants 0..11 */
#define MAX_GI 16        /* GPU instance ids 0..14 (the driver's, see gi_id in standin_mig.c) */
#define MAX_CI 8         /* compute instance ids 0..7 per GPU instance */
#define MAX_PROCS 64
#define MAX_PAGES 64
#define TEXT 96
#define MAX_LINKS 18     /* NVML_NVLINK_MAX_LINKS of the nvml.h Slurm 22.05/24.11 were built with */
#define MAX_CLOCKS 8
#define MAX_GFX 64

struct profile {        /* one NVML_GPU_INSTANCE_PROFILE_<n> of a GPU model, from `nvidia-smi mig -lgip` */
    int present;
    unsigned id, slices, count, sm, ce, dec, enc, jpeg, ofa, mem_slices;
    unsigned long long mem_mb;
    char name[32];      /* 3g.40gb */
    unsigned nplace;
    unsigned place[8];  /* allowed start memory slices */
};

struct gi { int used; unsigned profile; unsigned start; };           /* index = GPU instance id */
struct ci { int used; unsigned profile; char uuid[TEXT]; };          /* index = compute instance id */

struct proc { unsigned pid; unsigned long long used_mib; unsigned gi, ci; };
struct acct {
    unsigned pid, gpu_util, mem_util; unsigned long long max_mem_mib, time_ms, start_us;
};

struct gpu {
    char name[TEXT], uuid[TEXT], serial[TEXT], bus_id[TEXT];
    char fabric[TEXT];  /* GPU fabric info "<clusterUuid>:<cliqueId>:<state>", "" = not supported */
    unsigned pci_device_id, pci_subsystem_id, minor;
    unsigned long long mem_total_mib, mem_reserved_mib, mem_used_mib;
    unsigned util_gpu, util_mem;
    unsigned long long energy_mj, power_mw, energy_epoch_ms;
    char cpus[256];     /* Linux cpu list, "" = not recorded (NOT_SUPPORTED) */
    int compute_mode, persistence, accounting, ecc, lost;
    unsigned long long ecc_vol_corr, ecc_vol_unc, ecc_agg_corr, ecc_agg_unc;
    int pages_supported;  /* 0: page retirement N/A (Ampere+) */
    unsigned n_sbe, n_dbe; unsigned long long sbe[MAX_PAGES], dbe[MAX_PAGES]; int pages_pending;
    int remap_supported; unsigned remap_corr, remap_unc, remap_pending, remap_failure;
    int mig_capable, mig_current, mig_pending;
    unsigned nlinks;    /* NVLink lanes; 0: NVLink not supported (PCIe-only board) */
    char links[MAX_LINKS][32];  /* remote PCI bus id of each lane, "" = lane inactive */
    unsigned nmem_clocks, ngfx[MAX_CLOCKS];  /* supported clocks (nvidia-smi -q -d SUPPORTED_CLOCKS) */
    unsigned mem_clocks[MAX_CLOCKS], gfx_clocks[MAX_CLOCKS][MAX_GFX];
    unsigned app_mem, app_gfx, def_mem, def_gfx;  /* applications clocks: current and default (MHz) */
    unsigned nprocs; struct proc procs[MAX_PROCS];
    unsigned nacct; struct acct accts[MAX_PROCS];
    struct gi gis[MAX_GI];
    struct ci cis[MAX_GI][MAX_CI];
};

struct node {
    char driver_version[TEXT], nvml_version[TEXT];
    int cuda_version;
    char fail[TEXT];    /* comma list of switches, see docs */
    char hang[TEXT];    /* <symbol>[:seconds] */
    int root_only;      /* Set/Create/Destroy need euid 0 */
    unsigned mig_serial;
    struct profile profiles[MAX_PROFILES];
    unsigned ngpus;
    struct gpu gpus[MAX_GPUS];
};

extern struct node N;
extern char state_error[256];

const char *state_path(void);
int state_load(void);                  /* OK, E_DRIVER_NOT_LOADED (no file), E_UNKNOWN (corrupt) */
int state_lock(void);                  /* exclusive lock + reload; returns fd (>=0) or -rc */
int state_commit_unlock(int fd, int write);
int switch_on(const char *name);       /* fail=<name> in the state file or SLURM_GPU_NVML_STANDIN_FAIL */
void maybe_hang(const char *symbol);   /* hang=<symbol>[:s] in the state file or SLURM_GPU_NVML_STANDIN_HANG */
int proc_alive(unsigned pid);

#endif
