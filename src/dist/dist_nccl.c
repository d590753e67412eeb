/* dist_nccl.c — the NCCL transport of dist.h for CUDA memory: one communicator per job (rank 0's
 * unique id broadcast over MPI; none needed for a one-rank job), made non-blocking so that creating
 * it and every collective are polled under the job's deadline (ncclCommGetAsyncError,
 * cudaStreamQuery) instead of blocking inside the library. Collectives run on a stream of their own
 * after the backend's stream is drained (dist.c synchronizes the backend first), and the host waits
 * for them, so the backend's next kernels see the result. On a failure or timeout the communicator
 * is aborted (ncclCommAbort) before the job is. Compiled to stubs without FL_HAVE_NCCL. */
#include "dist/dist_internal.h"

#ifdef FL_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>

static ncclComm_t comm;
static cudaStream_t stream;
static int ready;

int fl_dist_nccl_built(void) { return 1; }

static void check(ncclResult_t r, const char *what) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    char why[512];
    snprintf(why, sizeof why, "NCCL failed: %s%s%s", ncclGetErrorString(r), ready ? " — " : "",
             ready ? ncclGetLastError(comm) : "");
    fl_dist_fail(what, why);
}

/* Until the communicator has no operation in progress (non-blocking mode). */
static void wait_comm(const char *what) {
    double start = fl_dist_now();
    for (long polls = 0;; polls++) {
        ncclResult_t state = ncclSuccess;
        check(ncclCommGetAsyncError(comm, &state), what);
        if (state == ncclSuccess) return;
        check(state, what);
        fl_dist_check_deadline(start, what);
        fl_dist_poll_pause(polls);
    }
}

/* Until the stream's work is done, watching the communicator for asynchronous errors. */
static void wait_stream(const char *what) {
    double start = fl_dist_now();
    for (long polls = 0;; polls++) {
        cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) {
            char why[256];
            snprintf(why, sizeof why, "CUDA failed: %s", cudaGetErrorString(e));
            fl_dist_fail(what, why);
        }
        ncclResult_t state = ncclSuccess;
        check(ncclCommGetAsyncError(comm, &state), what);
        check(state, what);
        fl_dist_check_deadline(start, what);
        fl_dist_poll_pause(polls);
    }
}

static void init(void) {
    if (ready) return;
    const fl_dist *w = fl_dist_world();
    ncclUniqueId id;
    if (w->rank == 0) check(ncclGetUniqueId(&id), "making the NCCL unique id");
    if (w->size > 1) fl_dist_mpi_broadcast(&id, sizeof id, "the NCCL unique id");
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        fl_dist_fail("creating the NCCL stream", cudaGetErrorString(cudaGetLastError()));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check(ncclCommInitRankConfig(&comm, w->size, id, w->rank, &config), "creating the NCCL communicator");
    ready = 1;
    wait_comm("creating the NCCL communicator");
}

void fl_dist_nccl_sum_f32(float *dev, size_t n, const char *what) {
    init();
    check(ncclAllReduce(dev, dev, n, ncclFloat32, ncclSum, comm, stream), what);
    wait_comm(what);
    wait_stream(what);
}

void fl_dist_nccl_broadcast(void *dev, size_t bytes, const char *what) {
    init();
    check(ncclBroadcast(dev, dev, bytes, ncclUint8, 0, comm, stream), what);
    wait_comm(what);
    wait_stream(what);
}

void fl_dist_nccl_abort(void) {
    if (ready) ncclCommAbort(comm);
    ready = 0;
}

#else
#include "common/error.h"

int fl_dist_nccl_built(void) { return 0; }
void fl_dist_nccl_sum_f32(float *dev, size_t n, const char *what) {
    (void)dev, (void)n;
    fl_die("%s: NCCL collective in a build without NCCL", what);
}
void fl_dist_nccl_broadcast(void *dev, size_t bytes, const char *what) {
    (void)dev, (void)bytes;
    fl_die("%s: NCCL collective in a build without NCCL", what);
}
void fl_dist_nccl_abort(void) {}
#endif
