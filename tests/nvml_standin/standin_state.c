/* SPDX-License-Identifier: Apache-2.0 */
/* The state file: strict parse (anything unexpected = corrupt = NVML_ERROR_UNKNOWN, never a crash),
 * serialise, write-through with an exclusive flock on <path>.lock and an atomic rename. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"

struct node N;
char state_error[256];
static char path_buf[4096];

#define MAX_STATE_BYTES (4u << 20)

const char *state_path(void)
{
    const char *p = getenv("SLURM_GPU_NVML_STANDIN");
    if (p && *p) return p;
    const char *dir = getenv("SLURM_GPU_NVML_STANDIN_DIR");  /* one state per node: <dir>/<node>.state */
    if (!dir || !*dir) return NULL;
    const char *node = getenv("SLURMD_NODENAME");
    char host[256] = "";
    if (!node || !*node) {
        if (gethostname(host, sizeof host - 1) != 0) return NULL;
        node = host;
    }
    if (snprintf(path_buf, sizeof path_buf, "%s/%s.state", dir, node) >= (int)sizeof path_buf) return NULL;
    return path_buf;
}

static int bad(int line, const char *what, const char *key)
{
    snprintf(state_error, sizeof state_error, "%s:%d: %s%s%s", state_path(), line, what, key ? ": " : "",
             key ? key : "");
    if (getenv("SLURM_GPU_NVML_STANDIN_DEBUG")) fprintf(stderr, "nvml stand-in: %s\n", state_error);
    return E_UNKNOWN;
}

static int num(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    if (!*s || *s == '-') return 0;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v > max) return 0;
    *out = v;
    return 1;
}

static int text(char *dst, size_t n, const char *v)
{
    if (strlen(v) >= n) return 0;
    strcpy(dst, v);
    return 1;
}

/* "a:b:c d:e:f" -> rows of up to `width` unsigned long long fields; returns rows or -1 */
static int rows(const char *v, int width, unsigned long long out[][6], int max)
{
    char buf[8192];
    if (strlen(v) >= sizeof buf) return -1;
    strcpy(buf, v);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (n >= max) return -1;
        int k = 0;
        for (char *s2 = NULL, *f = strtok_r(tok, ":", &s2); f; f = strtok_r(NULL, ":", &s2)) {
            if (k >= width || !num(f, ~0ULL, &out[n][k])) return -1;
            k++;
        }
        if (k != width) return -1;
        n++;
    }
    return n;
}

static int gpu_key(struct gpu *g, const char *k, const char *v)
{
    unsigned long long x, r[MAX_PROCS][6];
    int n;
#define U(key, field, max) if (!strcmp(k, key)) { if (!num(v, max, &x)) return 0; g->field = x; return 1; }
#define T(key, field) if (!strcmp(k, key)) return text(g->field, sizeof g->field, v);
    T("name", name) T("uuid", uuid) T("serial", serial) T("bus_id", bus_id) T("cpus", cpus) T("fabric", fabric)
    U("pci_device_id", pci_device_id, 0xffffffffu) U("pci_subsystem_id", pci_subsystem_id, 0xffffffffu)
    U("minor", minor, 255) U("memory_total_mib", mem_total_mib, 1ULL << 40)
    U("memory_reserved_mib", mem_reserved_mib, 1ULL << 40) U("memory_used_mib", mem_used_mib, 1ULL << 40)
    U("util_gpu", util_gpu, 100) U("util_memory", util_mem, 100) U("energy_mj", energy_mj, ~0ULL)
    U("power_mw", power_mw, 10000000) U("energy_epoch_ms", energy_epoch_ms, ~0ULL)
    U("compute_mode", compute_mode, 3) U("persistence", persistence, 1) U("accounting", accounting, 1)
    U("ecc", ecc, 1) U("lost", lost, 1) U("mig_capable", mig_capable, 1) U("mig_current", mig_current, 1)
    U("mig_pending", mig_pending, 1) U("ecc_volatile_corrected", ecc_vol_corr, ~0ULL)
    U("ecc_volatile_uncorrected", ecc_vol_unc, ~0ULL) U("ecc_aggregate_corrected", ecc_agg_corr, ~0ULL)
    U("ecc_aggregate_uncorrected", ecc_agg_unc, ~0ULL)
#undef U
#undef T
    if (!strcmp(k, "retired_pages")) {  /* na | sbe=<addr,...>;dbe=<addr,...>;pending=<0|1> */
        g->pages_supported = 0;
        if (!strcmp(v, "na")) return 1;
        char buf[4096], *save = NULL;
        if (strlen(v) >= sizeof buf) return 0;
        strcpy(buf, v);
        int seen = 0;
        for (char *part = strtok_r(buf, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(part, '=');
            if (!eq) return 0;
            *eq = 0;
            if (!strcmp(part, "pending")) {
                if (!num(eq + 1, 1, &x)) return 0;
                g->pages_pending = (int)x;
                seen |= 4;
                continue;
            }
            int dbe = !strcmp(part, "dbe");
            if (!dbe && strcmp(part, "sbe")) return 0;
            unsigned *cnt = dbe ? &g->n_dbe : &g->n_sbe;
            unsigned long long *arr = dbe ? g->dbe : g->sbe;
            *cnt = 0;
            char *s3 = NULL;
            for (char *a = strtok_r(eq + 1, ",", &s3); a; a = strtok_r(NULL, ",", &s3)) {
                if (*cnt >= MAX_PAGES || !num(a, ~0ULL, &arr[*cnt])) return 0;
                (*cnt)++;
            }
            seen |= dbe ? 2 : 1;
        }
        g->pages_supported = seen == 7;
        return seen == 7;
    }
    if (!strcmp(k, "remapped_rows")) {  /* na | corr:unc:pending:failure */
        g->remap_supported = 0;
        if (!strcmp(v, "na")) return 1;
        if (rows(v, 4, r, 1) != 1 || r[0][2] > 1 || r[0][3] > 1) return 0;
        g->remap_corr = r[0][0], g->remap_unc = r[0][1], g->remap_pending = r[0][2], g->remap_failure = r[0][3];
        g->remap_supported = 1;
        return 1;
    }
    if (!strcmp(k, "processes")) {  /* pid:used_mib:gi:ci ... */
        if ((n = rows(v, 4, r, MAX_PROCS)) < 0) return 0;
        g->nprocs = n;
        for (int i = 0; i < n; i++)
            g->procs[i] = (struct proc){r[i][0], r[i][1], r[i][2], r[i][3]};
        return 1;
    }
    if (!strcmp(k, "accounted")) {  /* pid:gpu_util:mem_util:max_mem_mib:time_ms:start_us ... */
        if ((n = rows(v, 6, r, MAX_PROCS)) < 0) return 0;
        g->nacct = n;
        for (int i = 0; i < n; i++)
            g->accts[i] = (struct acct){r[i][0], r[i][1], r[i][2], r[i][3], r[i][4], r[i][5]};
        return 1;
    }
    if (!strcmp(k, "nvlinks")) {  /* na | <remote bus id or -> ... (one per lane) */
        g->nlinks = 0;
        if (!strcmp(v, "na")) return 1;
        char buf[MAX_LINKS * 32 + 64], *save = NULL;
        if (strlen(v) >= sizeof buf) return 0;
        strcpy(buf, v);
        for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
            if (g->nlinks >= MAX_LINKS || strlen(t) >= 32) return 0;
            strcpy(g->links[g->nlinks++], strcmp(t, "-") ? t : "");
        }
        return 1;
    }
    if (!strcmp(k, "clocks")) {  /* na | <mem>:<gfx>/<gfx>/... ... */
        g->nmem_clocks = 0;
        if (!strcmp(v, "na")) return 1;
        char buf[4096], *save = NULL;
        if (strlen(v) >= sizeof buf) return 0;
        strcpy(buf, v);
        for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
            unsigned m = g->nmem_clocks;
            char *colon = strchr(t, ':'), *s2 = NULL;
            if (m >= MAX_CLOCKS || !colon) return 0;
            *colon = 0;
            if (!num(t, 100000, &x)) return 0;
            g->mem_clocks[m] = x;
            g->ngfx[m] = 0;
            for (char *c = strtok_r(colon + 1, "/", &s2); c; c = strtok_r(NULL, "/", &s2)) {
                if (g->ngfx[m] >= MAX_GFX || !num(c, 100000, &x)) return 0;
                g->gfx_clocks[m][g->ngfx[m]++] = x;
            }
            g->nmem_clocks++;
        }
        return 1;
    }
    if (!strcmp(k, "app_clocks") || !strcmp(k, "default_app_clocks")) {  /* <mem>:<gfx> */
        if (rows(v, 2, r, 1) != 1 || r[0][0] > 100000 || r[0][1] > 100000) return 0;
        if (k[0] == 'a') g->app_mem = r[0][0], g->app_gfx = r[0][1];
        else g->def_mem = r[0][0], g->def_gfx = r[0][1];
        return 1;
    }
    unsigned gi, ci;
    char tail;
    if (sscanf(k, "gi.%u%c", &gi, &tail) == 1) {  /* gi.<id>=<profile>:<start> */
        if (gi >= MAX_GI || rows(v, 2, r, 1) != 1 || r[0][0] >= MAX_PROFILES || r[0][1] > 7) return 0;
        g->gis[gi] = (struct gi){1, r[0][0], r[0][1]};
        return 1;
    }
    if (sscanf(k, "ci.%u.%u%c", &gi, &ci, &tail) == 2) {  /* ci.<gi>.<id>=<profile>:<MIG uuid> */
        const char *colon = strchr(v, ':');
        char prof[16];
        if (gi >= MAX_GI || ci >= MAX_CI || !colon || colon - v >= (long)sizeof prof) return 0;
        memcpy(prof, v, colon - v);
        prof[colon - v] = 0;
        if (!num(prof, 4, &x)) return 0;  /* NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE */
        g->cis[gi][ci].used = 1;
        g->cis[gi][ci].profile = (unsigned)x;
        return text(g->cis[gi][ci].uuid, TEXT, colon + 1) && !strncmp(colon + 1, "MIG-", 4);
    }
    return 0;
}

static int profile_key(struct profile *p, const char *v)
{   /* id:name:slices:count:sm:ce:dec:enc:jpeg:ofa:mem_mb:mem_slices:start/start/... */
    char buf[512], *f[13], *save = NULL;
    unsigned long long x[13];
    if (strlen(v) >= sizeof buf) return 0;
    strcpy(buf, v);
    int n = 0;
    for (char *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
        if (n >= 13) return 0;
        f[n++] = t;
    }
    if (n != 13 || !text(p->name, sizeof p->name, f[1])) return 0;
    for (int i = 0; i < 12; i++)
        if (i != 1 && !num(f[i], i == 10 ? (1ULL << 40) : 4096, &x[i])) return 0;
    p->id = x[0], p->slices = x[2], p->count = x[3], p->sm = x[4], p->ce = x[5], p->dec = x[6];
    p->enc = x[7], p->jpeg = x[8], p->ofa = x[9], p->mem_mb = x[10], p->mem_slices = x[11];
    if (p->mem_slices == 0 || p->mem_slices > 8) return 0;
    p->nplace = 0;
    char *s2 = NULL;
    for (char *t = strtok_r(f[12], "/", &s2); t; t = strtok_r(NULL, "/", &s2)) {
        unsigned long long st;
        if (p->nplace >= 8 || !num(t, 7, &st) || st + p->mem_slices > 8) return 0;
        p->place[p->nplace++] = st;
    }
    p->present = p->nplace > 0;
    return p->present;
}

static int top_key(const char *k, const char *v)
{
    unsigned long long x;
    if (!strcmp(k, "driver_version")) return text(N.driver_version, TEXT, v);
    if (!strcmp(k, "nvml_version")) return text(N.nvml_version, TEXT, v);
    if (!strcmp(k, "fail")) return text(N.fail, TEXT, v);
    if (!strcmp(k, "hang")) return text(N.hang, TEXT, v);
    if (!strcmp(k, "cuda_version")) return num(v, 1000000, &x) && (N.cuda_version = x, 1);
    if (!strcmp(k, "root_only")) return num(v, 1, &x) && (N.root_only = x, 1);
    if (!strcmp(k, "mig_serial")) return num(v, 0xffffffffu, &x) && (N.mig_serial = x, 1);
    unsigned i;
    char tail;
    if (sscanf(k, "profile.%u%c", &i, &tail) == 1) return i < MAX_PROFILES && profile_key(&N.profiles[i], v);
    return 0;
}

int state_load(void)
{
    const char *path = state_path();
    state_error[0] = 0;
    if (!path) return E_DRIVER_NOT_LOADED;  /* no node served: like a host without the NVIDIA driver */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT ? E_DRIVER_NOT_LOADED : bad(0, "cannot open state file", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_STATE_BYTES) {
        close(fd);
        return bad(0, "not a regular file of at most 4 MiB", NULL);
    }
    char *buf = malloc(st.st_size + 1);
    if (!buf) { close(fd); return bad(0, "out of memory", NULL); }
    ssize_t got = 0, r;
    while (got < st.st_size && (r = read(fd, buf + got, st.st_size - got)) > 0) got += r;
    close(fd);
    buf[got] = 0;
    if (memchr(buf, 0, got)) { free(buf); return bad(0, "NUL byte in state file", NULL); }
    memset(&N, 0, sizeof N);
    int line = 0, rc = OK, have_format = 0, have_end = 0, have_gpus = 0;
    for (char *ln = buf, *next; ln && rc == OK; ln = next) {
        next = strchr(ln, '\n');
        if (next) *next++ = 0;
        line++;
        if (*ln == '#' || !*ln) continue;
        if (have_end) { rc = bad(line, "data after end", NULL); break; }
        char *eq = strchr(ln, '=');
        if (!eq) { rc = bad(line, "expected key=value", ln); break; }
        *eq = 0;
        const char *k = ln, *v = eq + 1;
        unsigned long long x = 0;
        unsigned gi;
        int ok;
        if (!have_format) {
            ok = !strcmp(k, "format") && !strcmp(v, "1");
            have_format = 1;
        } else if (!strcmp(k, "end")) {
            ok = !strcmp(v, "1");
            have_end = 1;
        } else if (!strcmp(k, "gpus")) {
            ok = !have_gpus && num(v, MAX_GPUS, &x);
            N.ngpus = x, have_gpus = 1;
        } else if (sscanf(k, "gpu.%u.", &gi) == 1) {
            const char *field = strchr(k + 4, '.');
            ok = have_gpus && gi < N.ngpus && field && gpu_key(&N.gpus[gi], field + 1, v);
        } else {
            ok = top_key(k, v);
        }
        if (!ok) rc = bad(line, "bad or unknown entry", k);
    }
    free(buf);
    if (rc == OK && !have_end) rc = bad(line, "truncated (no end=1 line)", NULL);
    for (unsigned i = 0; rc == OK && i < N.ngpus; i++) {
        const struct gpu *g = &N.gpus[i];
        if (!g->name[0] || !g->uuid[0] || !g->bus_id[0]) rc = bad(line, "gpu without name, uuid or bus_id", NULL);
        for (int gi = 0; rc == OK && gi < MAX_GI; gi++)
            for (int ci = 0; rc == OK && ci < MAX_CI; ci++)
                if ((g->gis[gi].used && !N.profiles[g->gis[gi].profile].present) ||
                    (g->cis[gi][ci].used && !g->gis[gi].used))
                    rc = bad(line, "MIG instance without its profile or GPU instance", NULL);
    }
    return rc;
}

static void put_rows_procs(FILE *f, const struct gpu *g)
{
    for (unsigned i = 0; i < g->nprocs; i++)
        fprintf(f, "%s%u:%llu:%u:%u", i ? " " : "", g->procs[i].pid, g->procs[i].used_mib, g->procs[i].gi,
                g->procs[i].ci);
}

static int serialise(FILE *f)
{
    fprintf(f, "format=1\n# slurm-gpu stand-in libnvidia-ml state (docs/nvml_standin.md)\n");
    fprintf(f, "driver_version=%s\nnvml_version=%s\ncuda_version=%d\nfail=%s\nhang=%s\nroot_only=%d\n"
            "mig_serial=%u\n", N.driver_version, N.nvml_version, N.cuda_version, N.fail, N.hang, N.root_only,
            N.mig_serial);
    for (int i = 0; i < MAX_PROFILES; i++) {
        const struct profile *p = &N.profiles[i];
        if (!p->present) continue;
        fprintf(f, "profile.%d=%u:%s:%u:%u:%u:%u:%u:%u:%u:%u:%llu:%u:", i, p->id, p->name, p->slices, p->count,
                p->sm, p->ce, p->dec, p->enc, p->jpeg, p->ofa, p->mem_mb, p->mem_slices);
        for (unsigned j = 0; j < p->nplace; j++) fprintf(f, "%s%u", j ? "/" : "", p->place[j]);
        fputc('\n', f);
    }
    fprintf(f, "gpus=%u\n", N.ngpus);
    for (unsigned i = 0; i < N.ngpus; i++) {
        const struct gpu *g = &N.gpus[i];
#define P(fmt, ...) fprintf(f, "gpu.%u." fmt "\n", i, __VA_ARGS__)
        P("name=%s", g->name); P("uuid=%s", g->uuid); P("serial=%s", g->serial); P("bus_id=%s", g->bus_id);
        P("fabric=%s", g->fabric);
        P("pci_device_id=0x%08X", g->pci_device_id); P("pci_subsystem_id=0x%08X", g->pci_subsystem_id);
        P("minor=%u", g->minor); P("memory_total_mib=%llu", g->mem_total_mib);
        P("memory_reserved_mib=%llu", g->mem_reserved_mib); P("memory_used_mib=%llu", g->mem_used_mib);
        P("util_gpu=%u", g->util_gpu); P("util_memory=%u", g->util_mem); P("energy_mj=%llu", g->energy_mj);
        P("power_mw=%llu", g->power_mw); P("energy_epoch_ms=%llu", g->energy_epoch_ms); P("cpus=%s", g->cpus);
        P("compute_mode=%d", g->compute_mode); P("persistence=%d", g->persistence);
        P("accounting=%d", g->accounting); P("ecc=%d", g->ecc); P("lost=%d", g->lost);
        P("ecc_volatile_corrected=%llu", g->ecc_vol_corr); P("ecc_volatile_uncorrected=%llu", g->ecc_vol_unc);
        P("ecc_aggregate_corrected=%llu", g->ecc_agg_corr); P("ecc_aggregate_uncorrected=%llu", g->ecc_agg_unc);
        if (!g->pages_supported) {
            P("retired_pages=%s", "na");
        } else {
            fprintf(f, "gpu.%u.retired_pages=sbe=", i);
            for (unsigned j = 0; j < g->n_sbe; j++) fprintf(f, "%s0x%llx", j ? "," : "", g->sbe[j]);
            fprintf(f, ";dbe=");
            for (unsigned j = 0; j < g->n_dbe; j++) fprintf(f, "%s0x%llx", j ? "," : "", g->dbe[j]);
            fprintf(f, ";pending=%d\n", g->pages_pending);
        }
        if (g->remap_supported)
            P("remapped_rows=%u:%u:%u:%u", g->remap_corr, g->remap_unc, g->remap_pending, g->remap_failure);
        else
            P("remapped_rows=%s", "na");
        P("mig_capable=%d", g->mig_capable); P("mig_current=%d", g->mig_current);
        P("mig_pending=%d", g->mig_pending);
        if (!g->nlinks) P("nvlinks=%s", "na");
        else {
            fprintf(f, "gpu.%u.nvlinks=", i);
            for (unsigned j = 0; j < g->nlinks; j++) fprintf(f, "%s%s", j ? " " : "", g->links[j][0] ? g->links[j] : "-");
            fputc('\n', f);
        }
        if (!g->nmem_clocks) P("clocks=%s", "na");
        else {
            fprintf(f, "gpu.%u.clocks=", i);
            for (unsigned m = 0; m < g->nmem_clocks; m++) {
                fprintf(f, "%s%u:", m ? " " : "", g->mem_clocks[m]);
                for (unsigned j = 0; j < g->ngfx[m]; j++) fprintf(f, "%s%u", j ? "/" : "", g->gfx_clocks[m][j]);
            }
            fputc('\n', f);
        }
        P("app_clocks=%u:%u", g->app_mem, g->app_gfx); P("default_app_clocks=%u:%u", g->def_mem, g->def_gfx);
        fprintf(f, "gpu.%u.processes=", i);
        put_rows_procs(f, g);
        fprintf(f, "\ngpu.%u.accounted=", i);
        for (unsigned j = 0; j < g->nacct; j++) {
            const struct acct *a = &g->accts[j];
            fprintf(f, "%s%u:%u:%u:%llu:%llu:%llu", j ? " " : "", a->pid, a->gpu_util, a->mem_util,
                    a->max_mem_mib, a->time_ms, a->start_us);
        }
        fputc('\n', f);
        for (int gi = 0; gi < MAX_GI; gi++) {
            if (!g->gis[gi].used) continue;
            P("gi.%d=%u:%u", gi, g->gis[gi].profile, g->gis[gi].start);
            for (int ci = 0; ci < MAX_CI; ci++)
                if (g->cis[gi][ci].used) P("ci.%d.%d=%u:%s", gi, ci, g->cis[gi][ci].profile, g->cis[gi][ci].uuid);
        }
#undef P
    }
    fprintf(f, "end=1\n");
    return ferror(f) ? -1 : 0;
}

int state_lock(void)
{
    const char *path = state_path();
    if (!path) return -E_DRIVER_NOT_LOADED;
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -E_NO_PERMISSION;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) { close(fd); return -E_UNKNOWN; }
    int rc = state_load();
    if (rc != OK) { close(fd); return -rc; }
    return fd;
}

int state_commit_unlock(int fd, int write)
{
    int rc = OK;
    if (write) {
        const char *path = state_path();
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        int tfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        FILE *f = tfd < 0 ? NULL : fdopen(tfd, "w");
        if (!f) {
            if (tfd >= 0) close(tfd);
            rc = E_NO_PERMISSION;
        } else {
            int err = serialise(f);
            err |= fflush(f) != 0 || fsync(fileno(f)) != 0;
            err |= fclose(f) != 0;
            if (err || rename(tmp, path) != 0) {
                unlink(tmp);
                rc = E_UNKNOWN;
            }
        }
    }
    close(fd);  /* releases the flock */
    return rc;
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

int switch_on(const char *name)
{
    return in_list(N.fail, name) || in_list(getenv("SLURM_GPU_NVML_STANDIN_FAIL"), name);
}

static void hang_for(const char *spec, const char *symbol)
{
    size_t n = strlen(symbol);
    if (spec && spec[0] == '*' && (!spec[1] || spec[1] == ':'))
        n = 1;  /* "*" hangs every call */
    else if (!spec || strncmp(spec, symbol, n) || (spec[n] && spec[n] != ':'))
        return;
    long secs = spec[n] == ':' ? strtol(spec + n + 1, NULL, 10) : 0;
    if (secs <= 0) {
        for (;;) pause();  /* a driver call that never returns */
    }
    struct timespec ts = {secs, 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void maybe_hang(const char *symbol)
{
    hang_for(getenv("SLURM_GPU_NVML_STANDIN_HANG"), symbol);
    hang_for(N.hang, symbol);
}

int proc_alive(unsigned pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}
