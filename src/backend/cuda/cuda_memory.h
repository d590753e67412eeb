/* cuda_memory.h — the memory entries of the CUDA backend's interface (cuda_memory.cu); bound into
 * the fl_backend struct by cuda_backend.cu. Contracts as in backend.h. */
#ifndef FL_CUDA_MEMORY_H
#define FL_CUDA_MEMORY_H

#include <stddef.h>

#include "backend/backend.h"

void *cuda_alloc(size_t bytes);
void cuda_free(void *ptr);
void cuda_upload(void *dst, const void *host_src, size_t bytes);
void cuda_download(void *host_dst, const void *src, size_t bytes);
void cuda_copy(void *dst, const void *src, size_t bytes);
void cuda_copy_2d(void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t width, size_t rows);
void cuda_zero(void *ptr, size_t bytes);
void cuda_synchronize(void);
void cuda_upload_act(void *dst, const float *host_src, size_t n);
void cuda_download_act(float *host_dst, const void *src, size_t n);
void cuda_cast_to_weight(void *dst, const float *src, size_t n);
void cuda_cast_to_weight_2d(const fl_cast_block *blocks, int n, float scale, int cols);
void *cuda_alloc_host(size_t bytes);
void cuda_free_host(void *ptr);

/* cuda_graph.cu: recording a step as one CUDA graph (backend.h capture_*) */
int cuda_capture_begin(void);
void *cuda_capture_end(void);
int cuda_capture_replay(void *graph); /* -1: stale (a scratch slot grew since), nothing ran */
void cuda_capture_free(void *graph);

#endif
