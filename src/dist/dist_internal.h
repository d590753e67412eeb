/* dist_internal.h — between dist.c (the world, launcher detection, the policy of failures) and its
 * two transports, dist_mpi.c and dist_nccl.c. Not for callers outside src/dist/. */
#ifndef FL_DIST_INTERNAL_H
#define FL_DIST_INTERNAL_H

#include <stddef.h>

#include "dist/dist.h"

/* The one mutable world (dist.c). */
extern fl_dist fl_dist_self;

/* Ends the job: prints "fastlora<tag>: <what>: <why>" and aborts every rank (MPI_Abort, status 1). */
void fl_dist_fail(const char *what, const char *why) __attribute__((noreturn));
/* A waiting loop's pause: spins for the first polls, then sleeps 20 µs doubling to 1 ms, so a rank
 * waiting long (for rank 0's checkpoint, say) leaves its core to the others. */
void fl_dist_poll_pause(long polls);
double fl_dist_now(void);
/* Fails the job when `start` is more than the timeout ago. */
void fl_dist_check_deadline(double start, const char *what);

/* ---- MPI (dist_mpi.c; stubs that fail when the build has no MPI) ---- */
int fl_dist_mpi_built(void);
int fl_dist_mpi_init(fl_dist *w);     /* MPI_Init_thread, rank/size/local rank; 0 or an error */
void fl_dist_mpi_abort(int code) __attribute__((noreturn));
void fl_dist_mpi_sum_f32(float *host, size_t n, const char *what);
void fl_dist_mpi_sum_f64(double *host, size_t n, const char *what);
void fl_dist_mpi_minmax_f64(const double *x, double *mn, double *mx, size_t n, const char *what);
void fl_dist_mpi_broadcast(void *host, size_t bytes, const char *what);
void fl_dist_mpi_gather(const void *mine, size_t bytes, void *all, const char *what);
void fl_dist_mpi_allgather_int(int mine, int *all, const char *what);
void fl_dist_mpi_barrier(const char *what);

/* ---- NCCL (dist_nccl.c; FL_HAVE_NCCL) ---- */
int fl_dist_nccl_built(void);
void fl_dist_nccl_sum_f32(float *dev, size_t n, const char *what);
void fl_dist_nccl_broadcast(void *dev, size_t bytes, const char *what);
void fl_dist_nccl_abort(void); /* before MPI_Abort: release the communicator without waiting */

#endif
