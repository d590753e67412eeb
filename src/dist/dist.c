/* dist.c — the job as this process sees it (see dist.h): launcher detection, joining, the GPU of a
 * rank, the setup agreement, bounded waits and the dispatch of collectives to MPI or NCCL. */
#include "dist/dist.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "dist/dist_internal.h"

#ifdef FL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

fl_dist fl_dist_self = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .timeout_s = 600.0};
static int joined;
static const fl_backend *backend;
static int setup_called, setup_result, *setup_status; /* (size) each rank's status at the agreement */
static char tag[48];

const fl_dist *fl_dist_world(void) { return &fl_dist_self; }

const char *fl_dist_tag(void) { return tag; }

double fl_dist_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

void fl_dist_poll_pause(long polls) {
    if (polls < 2000) return;
    long us = polls < 2100 ? 20 : polls < 2200 ? 100 : 1000;
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

void fl_dist_fail(const char *what, const char *why) {
    fprintf(stderr, "fastlora%s: %s: %s; stopping every rank\n", tag, what, why);
    fflush(stderr);
    fl_dist_nccl_abort();
    fl_dist_mpi_abort(1);
}

void fl_dist_check_deadline(double start, const char *what) {
    if (fl_dist_now() - start <= fl_dist_self.timeout_s) return;
    char why[256];
    snprintf(why, sizeof why, "no answer from the other ranks for %.0f s (a rank died, hangs or is far slower; "
             "FASTLORA_DIST_TIMEOUT sets the limit)", fl_dist_self.timeout_s);
    fl_dist_fail(what, why);
}

/* ---- joining ---------------------------------------------------------------------------------- */

/* The launcher's process count from its environment (0: no launcher), and its name. */
static long launcher_size(const char **name) {
    static const struct { const char *var, *name; } vars[] = {
        {"OMPI_COMM_WORLD_SIZE", "mpirun"}, /* Open MPI's mpirun / prterun */
        {"PMI_SIZE", "pmi"},                /* MPICH's Hydra, Intel MPI, srun --mpi=pmi2 */
        {"SLURM_STEP_NUM_TASKS", "srun"},   /* srun (the batch script itself has no step task count) */
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].var);
        if (v && *v) {
            *name = vars[i].name;
            return strtol(v, NULL, 10);
        }
    }
    /* PMIx launchers (srun --mpi=pmix) name the rank, not the size: let MPI say */
    if (getenv("PMIX_RANK")) { *name = "pmix"; return 2; }
    *name = "";
    return 0;
}

static void on_sigterm(int sig) {
    /* the launcher ends every rank when one fails or the job is cancelled */
    static const char head[] = "fastlora";
    static const char msg[] = ": stopped by SIGTERM from the launcher (another rank failed, or the job was cancelled; "
                              "its message is above); resume from the last checkpoint with --resume\n";
    ssize_t w = write(2, head, sizeof head - 1);
    w = write(2, tag, strlen(tag));
    w = write(2, msg, sizeof msg - 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

int fl_dist_join(void) {
    if (joined) return 0;
    joined = 1;
    const char *t = getenv("FASTLORA_DIST_TIMEOUT");
    if (t) {
        char *end;
        double v = strtod(t, &end);
        if (end == t || *end || !(v > 0) || v > 1e7)
            return fl_input_error("FASTLORA_DIST_TIMEOUT='%s': expected a positive number of seconds", t);
        fl_dist_self.timeout_s = v;
    }
    const char *force = getenv("FASTLORA_DIST_FORCE");
    fl_dist_self.active = force && !strcmp(force, "1");
    const char *name;
    long n = launcher_size(&name);
    if (n <= 1) return 0;
    snprintf(fl_dist_self.launcher, sizeof fl_dist_self.launcher, "%s", name);
    if (!fl_dist_mpi_built())
        return fl_input_error("started by %s as one of %ld processes, but this fastlora was built without MPI; "
                              "rebuild where libopenmpi-dev is installed (make finds mpicc), or start one process "
                              "(%ld copies would each train and write the same output)", name, n, n);
    FL_TRY(fl_dist_mpi_init(&fl_dist_self));
    if (fl_dist_self.size > 1) {
        fl_dist_self.active = 1;
        snprintf(tag, sizeof tag, " (rank %d of %d)", fl_dist_self.rank, fl_dist_self.size);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigterm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
    }
    return 0;
}

int fl_dist_pick_gpu(void) {
#ifdef FL_HAVE_CUDA
    const fl_dist *w = &fl_dist_self;
    if (w->size <= 1 || getenv("FL_CUDA_DEVICE")) return 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
        cudaGetLastError();
        return 0; /* no GPU: the CPU backend, or --device cuda says why */
    }
    int dev = count == 1 ? 0 : w->local_rank;
    if (dev >= count)
        return fl_input_error("%d ranks on this node but it has %d GPUs: start at most one rank per GPU (or pick "
                              "devices with FL_CUDA_DEVICE / CUDA_VISIBLE_DEVICES per rank)", w->local_size, count);
    char v[16];
    snprintf(v, sizeof v, "%d", dev);
    setenv("FL_CUDA_DEVICE", v, 1);
#endif
    return 0;
}

void fl_dist_use_backend(const fl_backend *be) {
    backend = be;
    if (!fl_dist_self.active) return;
    int on_host = !strncmp(be->name, "cpu", 3);
    fl_dist_self.transport = !on_host && fl_dist_nccl_built() ? FL_DIST_NCCL
                             : fl_dist_self.size > 1          ? FL_DIST_MPI
                                                              : FL_DIST_NONE;
}

/* ---- the setup agreement ---------------------------------------------------------------------- */

int fl_dist_setup_done(int status) {
    if (setup_called) return setup_result;
    setup_called = 1;
    const fl_dist *w = &fl_dist_self;
    if (w->size <= 1) return setup_result = status;
    setup_status = fl_calloc((size_t)w->size, sizeof(int));
    fl_dist_mpi_allgather_int(status, setup_status, "the agreement that every rank is ready");
    setup_result = 0;
    for (int r = 0; r < w->size && !setup_result; r++)
        if (setup_status[r]) {
            setup_result = setup_status[r];
            if (!status) fl_fail(setup_result, "rank %d of %d failed while setting up (its message is above)", r, w->size);
        }
    return setup_result;
}

int fl_dist_prints_errors(void) {
    const fl_dist *w = &fl_dist_self;
    if (w->size <= 1 || w->rank == 0 || !setup_status) return 1;
    return setup_status[w->rank] != 0 && setup_status[0] == 0;
}

/* ---- collectives ------------------------------------------------------------------------------ */

static float *staging; /* host copy of a GPU buffer for MPI (CUDA build without NCCL) */
static size_t staging_bytes;

static float *stage(size_t bytes) {
    if (bytes > staging_bytes) {
        free(staging);
        staging = fl_malloc(bytes);
        staging_bytes = bytes;
    }
    return staging;
}

void fl_dist_allreduce_sum_f32(float *buf, size_t n, const char *what) {
    if (fl_dist_self.transport == FL_DIST_NCCL) {
        backend->synchronize();
        fl_dist_nccl_sum_f32(buf, n, what);
        return;
    }
    if (fl_dist_self.size <= 1) return;
    if (!strncmp(backend->name, "cpu", 3)) { fl_dist_mpi_sum_f32(buf, n, what); return; }
    float *host = stage(n * sizeof(float));
    backend->download(host, buf, n * sizeof(float));
    fl_dist_mpi_sum_f32(host, n, what);
    backend->upload(buf, host, n * sizeof(float));
}

void fl_dist_broadcast(void *buf, size_t bytes, const char *what) {
    if (fl_dist_self.transport == FL_DIST_NCCL) {
        backend->synchronize();
        fl_dist_nccl_broadcast(buf, bytes, what);
        return;
    }
    if (fl_dist_self.size <= 1) return;
    if (!strncmp(backend->name, "cpu", 3)) { fl_dist_mpi_broadcast(buf, bytes, what); return; }
    void *host = stage(bytes);
    backend->download(host, buf, bytes);
    fl_dist_mpi_broadcast(host, bytes, what);
    backend->upload(buf, host, bytes);
}

void fl_dist_allreduce_sum_f64(double *x, size_t n, const char *what) {
    if (fl_dist_self.size > 1) fl_dist_mpi_sum_f64(x, n, what);
}

void fl_dist_allreduce_minmax_f64(const double *x, double *min_out, double *max_out, size_t n, const char *what) {
    if (fl_dist_self.size > 1) { fl_dist_mpi_minmax_f64(x, min_out, max_out, n, what); return; }
    memcpy(min_out, x, n * sizeof(double));
    memcpy(max_out, x, n * sizeof(double));
}

void fl_dist_broadcast_host(void *buf, size_t bytes, const char *what) {
    if (fl_dist_self.size > 1) fl_dist_mpi_broadcast(buf, bytes, what);
}

void fl_dist_gather(const void *mine, size_t bytes, void *all, const char *what) {
    if (fl_dist_self.size > 1) { fl_dist_mpi_gather(mine, bytes, all, what); return; }
    if (all) memcpy(all, mine, bytes);
}

void fl_dist_barrier(const char *what) {
    if (fl_dist_self.size > 1) fl_dist_mpi_barrier(what);
}

/* ---- the test hook ---------------------------------------------------------------------------- */

void fl_dist_test_fault(int step) {
    const char *spec = getenv("FASTLORA_TEST_DIST_FAULT");
    if (!spec) return;
    char kind[8];
    int rank, at;
    if (sscanf(spec, "%7[a-z]:%d:%d", kind, &rank, &at) != 3 || rank != fl_dist_self.rank || at != step) return;
    fprintf(stderr, "fastlora%s: test fault '%s' at step %d\n", tag, kind, step);
    fflush(stderr);
    if (!strcmp(kind, "kill")) raise(SIGKILL);
    if (!strcmp(kind, "hang"))
        for (;;) pause();
}
