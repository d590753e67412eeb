/* cuda_plan.h — the host-side arithmetic of the CUDA backend, in plain C so it compiles and is
 * tested in every build (tests/test_cuda_plan.c), GPU or not: launch configurations, the LM-head
 * chunk size, the attention tiling, the NF4 tiles and the fixed scratch sizes. The memory a training
 * run needs is planned in one place, plan/plan.h (fl_plan_memory_compute), from these sizes.
 *
 * Nothing here touches the GPU or includes a CUDA header; the .cu files call these functions so
 * the numbers the tests check are the numbers the kernels launch with. Shapes use the glossary of
 * model/config.h (not included: the backend knows shapes, not models), N = B*T.
 */
#ifndef FL_CUDA_PLAN_H
#define FL_CUDA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise / per-row launch shapes ---- */

/* Blocks for a grid-stride loop over n items, `per_thread` items each, `threads` per block, capped
 * at max_blocks (>= 1 whenever n > 0; 0 for n == 0). */
unsigned fl_cuda_grid_1d(size_t n, int threads, int per_thread, unsigned max_blocks);

/* ---- LM head ---- */

/* Bytes for one chunk of bf16 logits (the only (rows, V) buffer that exists): FL_CUDA_LM_HEAD_BUDGET,
 * what the memory plan (plan/plan.h, `fastlora plan`) assumes, so the chunking depends on
 * the shapes (N, V) alone — never on the memory free at the first call, which would let two
 * processes (or two runs) split the same batch differently and differ bitwise. A GPU too small for
 * it is told so by the plan and the OOM message. FL_CUDA_LM_HEAD_MIN_BUDGET: the smallest budget
 * the tests take (fl_cuda_set_lm_head_budget). */
#define FL_CUDA_LM_HEAD_BUDGET ((size_t)4 << 30)
#define FL_CUDA_LM_HEAD_MIN_BUDGET ((size_t)256 << 20)
size_t fl_cuda_lm_head_budget(void);
/* Rows per LM-head chunk, as the CPU backend sizes its chunks (cpu_plan.h): all N when their bf16
 * logits (N x V x 2 bytes) fit budget_bytes, else N split into the fewest equal chunks that fit
 * (a multiple of 64 rows when that still fits); at least min(N, 64) rows. */
size_t fl_cuda_lm_head_chunk_rows(size_t N, int V, size_t budget_bytes);
/* Scratch bytes the LM head needs for that chunking: bf16 logits chunk + per-row f32 losses. */
size_t fl_cuda_lm_head_scratch_bytes(size_t N, int V, size_t budget_bytes);

/* ---- attention tiling (cuda_attention*.cu) ---- */

#define FL_ATTN_BQ 64            /* query rows per block (4 warps x 16 rows in the mma kernels) */
#define FL_ATTN_BK 64            /* keys per tile */
#define FL_ATTN_SIMPLE_WARPS 8   /* simple kernels: one warp per query row / key row */

typedef struct {
    unsigned grid_x, grid_y, grid_z;   /* launch grid */
    unsigned threads;                  /* per block */
    size_t smem_bytes;                 /* dynamic shared memory per block */
} fl_cuda_launch;

/* 1 when the mma (tensor-core) attention supports this head size (64 or 128). */
int fl_cuda_attn_mma_supported(int HS);
/* Forward, mma kernel: grid (ceil(T/BQ), NH, B), 128 threads, Q tile + one K and V tile in smem. */
fl_cuda_launch fl_cuda_attn_forward_launch(int B, int T, int NH, int HS);
/* Simple kernels (any HS up to 256): forward one warp per query row; backward
 * dq pass one warp per query row, dk/dv pass one warp per key row. */
fl_cuda_launch fl_cuda_attn_simple_launch(int B, int T, int heads, int HS);

/* ---- tensor-core attention backward (cuda_attention_bwd_mma.cu) ----
 * Four launches, no float atomics (bitwise reproducible):
 *   prep    D = rowsum(dO∘O) and lse in the log2 domain (B, NH, T), and the minimum of seg_start per
 *           chunk of FL_ATTN_SEG_CHUNK queries (B, seg_chunks) so the passes skip invisible tiles;
 *   dkv     one block per (key tile of BKV keys, query head, b): dK, dV of its keys over every
 *           query tile that sees them; with GQA (NH > NKV) it writes f32 partials per query head;
 *   dq      one block per (query tile of BQ queries, head, b): dQ over every visible key tile;
 *   reduce  GQA only: dK, dV of each kv head = the sum of its query heads' partials, in head order.
 * All scratch lives in one buffer at the offsets below. */
#define FL_ATTN_BWD_BKV 64       /* keys per dK/dV block (4 warps x 16 keys) */
#define FL_ATTN_BWD_BQ 64        /* queries per dQ block (4 warps x 16 queries) */
#define FL_ATTN_SEG_CHUNK 32     /* queries per seg_start minimum */

typedef struct {
    fl_cuda_launch prep, dkv, dq, reduce;
    int dkv_q_tile;                 /* queries per step of the dK/dV loop (a multiple of the chunk) */
    int seg_chunks;                 /* ceil(T / FL_ATTN_SEG_CHUNK) */
    int gqa_partials;               /* 1 when NH > NKV: dkv writes f32 partials, reduce sums them */
    size_t off_L2, off_D, off_seg_min, off_dk_part, off_dv_part;  /* byte offsets into the scratch */
    size_t scratch_bytes;
} fl_cuda_attn_bwd_plan;

/* The launches and scratch layout for B x T, NH query and NKV kv heads of HS (64 or 128). */
fl_cuda_attn_bwd_plan fl_cuda_attn_bwd_make_plan(int B, int T, int NH, int NKV, int HS);

/* ---- NF4 weights (cuda_nf4.cu) ---- */

#define FL_CUDA_NF4_TILE_BYTES ((size_t)64 << 20)   /* one dequantized bf16 tile of an NF4 weight */
/* Rows of a (rows, cols) NF4 weight per dequantized tile: as many as FL_CUDA_NF4_TILE_BYTES of bf16
 * hold, at least 1, at most rows. */
int64_t fl_cuda_nf4_tile_rows(int64_t rows, int64_t cols);

/* ---- fixed scratch (cuda_context.cu, cuda_memory.cu; plan/plan.c counts them) ---- */

#define FL_CUDA_WORKSPACE_BYTES ((size_t)32 << 20)   /* cuBLASLt workspace (Hopper wants 32 MiB) */
#define FL_CUDA_STAGING_FLOATS ((size_t)16 << 20)    /* f32 host<->bf16 conversion staging, 64 MiB */

#ifdef __cplusplus
}
#endif

#endif
