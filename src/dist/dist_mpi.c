/* dist_mpi.c — the MPI transport of dist.h: joining (MPI_Init_thread, ranks, the node's ranks by
 * MPI_Comm_split_type SHARED) and the collectives, each a non-blocking MPI operation polled with
 * MPI_Test under the job's deadline. Errors come back as codes (MPI_ERRORS_RETURN on the world
 * communicator) and end the job with the library's own words. Compiled to stubs when the build has
 * no MPI (FL_HAVE_MPI unset): then dist.c never starts a job of more than one rank. */
#include "dist/dist_internal.h"

#include "common/error.h"

#ifdef FL_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int fl_dist_mpi_built(void) { return 1; }

static void check(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING], why[MPI_MAX_ERROR_STRING + 64];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
    snprintf(why, sizeof why, "MPI failed: %s (a rank has probably died)", text);
    fl_dist_fail(what, why);
}

static void wait_for(MPI_Request *req, const char *what) {
    double start = fl_dist_now();
    for (long polls = 0;; polls++) {
        int done = 0;
        check(MPI_Test(req, &done, MPI_STATUS_IGNORE), what);
        if (done) return;
        fl_dist_check_deadline(start, what);
        fl_dist_poll_pause(polls);
    }
}

static void finalize(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

int fl_dist_mpi_init(fl_dist *w) {
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return fl_fail(FL_ERR_INTERNAL, "MPI_Init_thread failed (started by %s)", w->launcher);
    atexit(finalize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &w->local_rank);
        MPI_Comm_size(node, &w->local_size);
        MPI_Comm_free(&node);
    }
    return 0;
}

void fl_dist_mpi_abort(int code) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

/* Counts past INT_MAX go in chunks (one MPI call counts in int). */
enum { CHUNK = 1 << 28 };

static void allreduce(void *buf, size_t n, MPI_Datatype type, size_t size, MPI_Op op, const char *what) {
    for (size_t done = 0; done < n; done += CHUNK) {
        int count = (int)(n - done < CHUNK ? n - done : CHUNK);
        MPI_Request req;
        check(MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + done * size, count, type, op, MPI_COMM_WORLD, &req), what);
        wait_for(&req, what);
    }
}

void fl_dist_mpi_sum_f32(float *host, size_t n, const char *what) {
    allreduce(host, n, MPI_FLOAT, sizeof(float), MPI_SUM, what);
}

void fl_dist_mpi_sum_f64(double *host, size_t n, const char *what) {
    allreduce(host, n, MPI_DOUBLE, sizeof(double), MPI_SUM, what);
}

void fl_dist_mpi_minmax_f64(const double *x, double *mn, double *mx, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) mn[i] = mx[i] = x[i];
    allreduce(mn, n, MPI_DOUBLE, sizeof(double), MPI_MIN, what);
    allreduce(mx, n, MPI_DOUBLE, sizeof(double), MPI_MAX, what);
}

void fl_dist_mpi_broadcast(void *host, size_t bytes, const char *what) {
    for (size_t done = 0; done < bytes; done += CHUNK) {
        int count = (int)(bytes - done < CHUNK ? bytes - done : CHUNK);
        MPI_Request req;
        check(MPI_Ibcast((char *)host + done, count, MPI_BYTE, 0, MPI_COMM_WORLD, &req), what);
        wait_for(&req, what);
    }
}

void fl_dist_mpi_gather(const void *mine, size_t bytes, void *all, const char *what) {
    if (bytes > INT_MAX) fl_dist_fail(what, "too many bytes to gather");
    MPI_Request req;
    check(MPI_Igather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req), what);
    wait_for(&req, what);
}

void fl_dist_mpi_allgather_int(int mine, int *all, const char *what) {
    MPI_Request req;
    check(MPI_Iallgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &req), what);
    wait_for(&req, what);
}

void fl_dist_mpi_barrier(const char *what) {
    MPI_Request req;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &req), what);
    wait_for(&req, what);
}

#else /* no MPI in this build: dist.c keeps every job at one rank, so none of these runs */
#include <stdlib.h>

int fl_dist_mpi_built(void) { return 0; }
int fl_dist_mpi_init(fl_dist *w) { (void)w; return fl_fail(FL_ERR_INTERNAL, "this build has no MPI"); }
void fl_dist_mpi_abort(int code) { exit(code); }
static void no_mpi(const char *what) { fl_die("%s: a collective of several ranks in a build without MPI", what); }
void fl_dist_mpi_sum_f32(float *host, size_t n, const char *what) { (void)host, (void)n; no_mpi(what); }
void fl_dist_mpi_sum_f64(double *host, size_t n, const char *what) { (void)host, (void)n; no_mpi(what); }
void fl_dist_mpi_minmax_f64(const double *x, double *mn, double *mx, size_t n, const char *what) {
    (void)x, (void)mn, (void)mx, (void)n;
    no_mpi(what);
}
void fl_dist_mpi_broadcast(void *host, size_t bytes, const char *what) { (void)host, (void)bytes; no_mpi(what); }
void fl_dist_mpi_gather(const void *mine, size_t bytes, void *all, const char *what) {
    (void)mine, (void)bytes, (void)all;
    no_mpi(what);
}
void fl_dist_mpi_allgather_int(int mine, int *all, const char *what) { (void)mine, (void)all; no_mpi(what); }
void fl_dist_mpi_barrier(const char *what) { no_mpi(what); }
#endif
