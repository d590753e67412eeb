/* cuda_graph.cu — recording a training step as one CUDA graph and replaying it (backend.h,
 * capture_*): stream capture of everything the engine enqueues between capture_begin and
 * capture_end, instantiated once, launched with one call per step. Not the policy of when to record
 * (engine/step.c: a step's first run is op by op, then recorded; later steps of the same shape
 * replay it) and not the staging of inputs (the engine uploads from alloc_host memory, whose
 * addresses the graph's copy nodes keep).
 *
 * What a recording needs from the ops: nothing synchronizes, allocates or frees (the scratch arena
 * marks the recording failed instead of growing, cuda_context.cu); the cuBLASLt workspace is fixed
 * at init; every kernel argument that changes from step to step is read from device memory (the
 * step's scalars, the dropout streams, the batch). FL_CUDA_GRAPHS=0 turns recording off.
 *
 * A recording is stale once a scratch slot has grown after it (the old buffer it points at is
 * freed): replay refuses it and the engine re-records (backend.h, capture_replay). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_memory.h"

int cuda_capture_begin(void) {
    const char *env = getenv("FL_CUDA_GRAPHS");
    if (env && !strcmp(env, "0")) return -1;
    /* relaxed: the host-side calls some ops make once (cudaFuncSetAttribute) stay legal */
    CUDA_CHECK(cudaStreamBeginCapture(fl_cuda.stream, cudaStreamCaptureModeRelaxed));
    fl_cuda.recording = 1;
    fl_cuda.record_failed = 0;
    return 0;
}

/* A recording: the instantiated graph and the scratch generation it was made at (cuda_common.cuh). */
typedef struct {
    cudaGraphExec_t exec;
    unsigned generation;
} recording;

void *cuda_capture_end(void) {
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamEndCapture(fl_cuda.stream, &graph);
    fl_cuda.recording = 0;
    const char *why = err != cudaSuccess ? cudaGetErrorString(err)
                      : fl_cuda.record_failed ? "an op needed more scratch memory than its first run"
                                              : NULL;
    cudaGraphExec_t exec = NULL;
    if (!why) {
        err = cudaGraphInstantiate(&exec, graph, 0);
        if (err != cudaSuccess) why = cudaGetErrorString(err);
    }
    if (graph) CUDA_CHECK(cudaGraphDestroy(graph));
    if (why) {
        cudaGetLastError(); /* the failed capture's error is not sticky; clear it for the next check */
        fprintf(stderr, "fastlora: recording the step as a CUDA graph failed (%s)\n", why);
        return NULL;
    }
    recording *rec = (recording *)malloc(sizeof *rec);
    if (!rec) {
        CUDA_CHECK(cudaGraphExecDestroy(exec));
        return NULL;
    }
    rec->exec = exec;
    rec->generation = fl_cuda.scratch_generation;
    return rec;
}

/* A scratch slot freed to grow since the recording leaves it pointing at freed memory: refuse it
 * (the engine drops it and runs the step op by op, then records again) rather than replay it. */
int cuda_capture_replay(void *graph) {
    recording *rec = (recording *)graph;
    if (rec->generation != fl_cuda.scratch_generation) return -1;
    CUDA_CHECK(cudaGraphLaunch(rec->exec, fl_cuda.stream));
    fl_cuda_count_op();
    return 0;
}

void cuda_capture_free(void *graph) {
    if (!graph) return;
    recording *rec = (recording *)graph;
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream)); /* a replay may still run */
    CUDA_CHECK(cudaGraphExecDestroy(rec->exec));
    free(rec);
}
