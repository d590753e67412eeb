/* dist.h — data parallelism across processes: who this process is in a job started by a launcher
 * (`mpirun -np N`, `srun`), and the few collectives that training and bench need.
 *
 *   fl_dist_join();                       // MPI_Init when a launcher started several processes
 *   fl_dist_pick_gpu();                   // before the backend exists: FL_CUDA_DEVICE = local rank
 *   fl_dist_use_backend(be);              // NCCL for CUDA memory when built, else MPI
 *   status = fl_dist_setup_done(status);  // the ranks agree: any rank's failure stops them all
 *   fl_dist_allreduce_sum_f32(m->grads.data, m->grads.n, "the LoRA gradients of step 3");
 *
 * A plain start is rank 0 of 1: every collective returns at once and no MPI function is called, so
 * a build with MPI runs a single process exactly as one without. Transports: collectives on host
 * memory always go through MPI; on backend memory through NCCL when the backend is CUDA and the
 * build has NCCL (FL_HAVE_NCCL; the NCCL unique id travels over MPI), else through MPI (a GPU buffer
 * staged through the host). Failure is bounded: every collective waits at most the timeout
 * (FASTLORA_DIST_TIMEOUT seconds, default 600), polling a non-blocking operation; past it, or when
 * the library reports an error (a peer died), this rank prints one line naming what it waited for
 * and ends the whole job (MPI_Abort, exit status 1). A rank stopped by SIGTERM (the launcher ending
 * the job after another rank failed) says so on stderr.
 * Not the trainer's policy — which rank writes what, how micro-batches are dealt (train/trainer.c).
 */
#ifndef FL_DIST_H
#define FL_DIST_H

#include <stddef.h>

#include "backend/backend.h"

typedef enum { FL_DIST_NONE = 0, FL_DIST_MPI = 1, FL_DIST_NCCL = 2 } fl_dist_transport;

typedef struct {
    int rank, size;              /* this process in the job: 0 of 1 when not started by a launcher */
    int active;                  /* the distributed path runs: size > 1, or FASTLORA_DIST_FORCE=1 (a
                                  * one-rank job through every collective: tests; NCCL on one GPU) */
    int local_rank, local_size;  /* on this node (MPI_Comm_split_type SHARED) */
    fl_dist_transport transport; /* how collectives on backend memory travel (NONE at size 1) */
    double timeout_s;            /* the longest wait in one collective */
    char launcher[32];           /* "mpirun", "srun", "pmi", or "" */
} fl_dist;

/* The job as this process sees it: rank 0 of 1 until fl_dist_join() finds a launcher. */
const fl_dist *fl_dist_world(void);

/* Joins the job when a launcher started this process as one of several: MPI_Init, rank, size, local
 * rank, the SIGTERM note. Idempotent; a plain start touches no MPI. Returns 0, or 2 with a message:
 * a launcher started several processes and this build has no MPI (N independent copies would write
 * the same output), or FASTLORA_DIST_TIMEOUT is not a positive number of seconds. */
int fl_dist_join(void);

/* Before the backend is created: gives this rank the GPU of its local rank (sets FL_CUDA_DEVICE,
 * read by the CUDA backend when it starts), unless FL_CUDA_DEVICE is set already. One visible GPU
 * per rank (Slurm --gpus-per-task=1) is device 0. Returns 0, or 2 when more ranks share a node than
 * it has GPUs. Nothing at size 1 or in builds without CUDA. */
int fl_dist_pick_gpu(void);

/* The backend whose memory the backend collectives will see: NCCL when it is CUDA and the build has
 * NCCL, else MPI. The NCCL communicator is made at the first backend collective. */
void fl_dist_use_backend(const fl_backend *be);

/* The one agreement at the end of a command's setup (loading, checks, the output folder): each rank
 * gives its status, each gets the first non-zero status of the lowest failing rank (0: all ready).
 * A rank that fails before its command reaches this point must still call it once: the second and
 * later calls return the first result without communicating. */
int fl_dist_setup_done(int status);
/* Whether this rank should print its error line: a plain run; rank 0; or a rank whose own setup
 * failed while rank 0's did not (so one message is printed per distinct failure, not N copies). */
int fl_dist_prints_errors(void);
/* " (rank 1 of 4)" in a job, "" in a plain run: for messages. */
const char *fl_dist_tag(void);

/* ---- collectives: every rank calls them in the same order; `what` names the data in messages --- */

/* buf (n) in backend memory, summed over the ranks in place. */
void fl_dist_allreduce_sum_f32(float *buf, size_t n, const char *what);
/* bytes of backend memory from rank 0 to every rank. */
void fl_dist_broadcast(void *buf, size_t bytes, const char *what);
/* x (n) doubles in host memory, summed over the ranks in place. */
void fl_dist_allreduce_sum_f64(double *x, size_t n, const char *what);
/* x (n) doubles in host memory: the minimum and maximum over the ranks. */
void fl_dist_allreduce_minmax_f64(const double *x, double *min_out, double *max_out, size_t n, const char *what);
/* bytes of host memory from rank 0 to every rank. */
void fl_dist_broadcast_host(void *buf, size_t bytes, const char *what);
/* `bytes` of host memory from every rank into all (size x bytes, by rank) on rank 0 (all may be NULL
 * elsewhere). */
void fl_dist_gather(const void *mine, size_t bytes, void *all, const char *what);
/* Waits until every rank is here, sleeping between polls (an idle rank does not spin a core). */
void fl_dist_barrier(const char *what);

/* Test hook (tests/test_dist.c): FASTLORA_TEST_DIST_FAULT=kill:R:S makes rank R SIGKILL itself when
 * step S starts; hang:R:S makes it sleep there forever. Nothing when unset. */
void fl_dist_test_fault(int step);

#endif
