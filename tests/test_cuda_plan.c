/* test_cuda_plan.c — the CUDA backend's host-side arithmetic (backend/cuda/cuda_plan.c), which
 * compiles and runs in every build, GPU or not: launch grids, the LM-head chunk sizing, the
 * attention tiling, and the planned memory (plan/plan.h) of the benchmark presets on an 80 GB card. */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/cuda_compare.h"
#include "backend/cuda/cuda_plan.h"
#include "plan/plan.h"
#include "test.h"

TEST(cuda_plan_grid_1d) {
    CHECK_EQ_INT(fl_cuda_grid_1d(0, 256, 1, 1024), 0);
    CHECK_EQ_INT(fl_cuda_grid_1d(1, 256, 1, 1024), 1);
    CHECK_EQ_INT(fl_cuda_grid_1d(256, 256, 1, 1024), 1);
    CHECK_EQ_INT(fl_cuda_grid_1d(257, 256, 1, 1024), 2);
    CHECK_EQ_INT(fl_cuda_grid_1d(257, 256, 8, 1024), 1);
    CHECK_EQ_INT(fl_cuda_grid_1d((size_t)1 << 40, 256, 4, 4096), 4096); /* capped: grid-stride covers the rest */
    CHECK_EQ_INT(fl_cuda_grid_1d(100, 256, 1, 0), 1);
}

/* Rows of one LM-head chunk: the whole batch when its bf16 logits fit the budget, else the fewest
 * equal chunks that fit, 64-row multiples when that still fits (the rule of cpu_plan.h). */
TEST(cuda_plan_lm_head_chunk_fits_budget) {
    /* the budget is the constant the memory plans assume: the chunks depend on the shapes alone, not
     * on the memory free at the first call (two processes would split the same batch differently) */
    CHECK_EQ_INT(fl_cuda_lm_head_budget(), FL_CUDA_LM_HEAD_BUDGET);
    CHECK_EQ_INT(fl_cuda_lm_head_scratch_bytes(8192, 151936, fl_cuda_lm_head_budget()),
                 fl_cuda_lm_head_scratch_bytes(8192, 151936, FL_CUDA_LM_HEAD_BUDGET));
    /* Qwen2.5's vocabulary at 4 x 2048 on an H200 (free memory ~120 GB): all 8192 rows, 2.5 GB, one
     * chunk, so the dX GEMM's (8192, C) output fills the GPU */
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(8192, 151936, FL_CUDA_LM_HEAD_BUDGET), 8192);
    /* 4 x 4096 = 16k tokens (5 GB of logits): two equal chunks */
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(16384, 152064, FL_CUDA_LM_HEAD_BUDGET), 8192);
    /* the smallest budget: 882 rows fit; 19 chunks are needed, 863 rows each (896 would not fit) */
    size_t N = 16384, budget = FL_CUDA_LM_HEAD_MIN_BUDGET;
    size_t rows = fl_cuda_lm_head_chunk_rows(N, 152064, budget);
    CHECK_EQ_INT(rows, 863);
    CHECK(rows * 152064 * 2 <= budget);
    CHECK_EQ_INT((N + rows - 1) / rows, (N + 881) / 882); /* as few chunks as the budget allows */
    size_t scratch = fl_cuda_lm_head_scratch_bytes(N, 152064, budget);
    CHECK_MSG(scratch < ((size_t)300 << 20), "LM-head scratch %.1f MiB >= 300 MiB", scratch / 1048576.0);
    /* small vocabularies: two chunks of 4096 rows instead of 4194 + 3998; whole batches when they fit */
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(8192, 32000, budget), 4096);
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(100, 32000, budget), 100);
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(0, 32000, budget), 0);
    /* a budget smaller than one row still makes progress, 64 rows at a time */
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(1000, 152064, 1024), 64);
    /* the chunks cover N exactly */
    size_t covered = 0;
    for (size_t n0 = 0; n0 < N; n0 += rows) covered += N - n0 < rows ? N - n0 : rows;
    CHECK_EQ_INT(covered, N);
}

TEST(cuda_plan_attention_launch) {
    fl_cuda_launch l = fl_cuda_attn_forward_launch(4, 2048, 28, 128);
    CHECK_EQ_INT(l.grid_x, 32);
    CHECK_EQ_INT(l.grid_y, 28);
    CHECK_EQ_INT(l.grid_z, 4);
    CHECK_EQ_INT(l.threads, 128);
    CHECK_EQ_INT(l.smem_bytes, 48 * 1024);              /* Q + K + V tiles of 64 x 128 bf16 */
    CHECK(fl_cuda_attn_forward_launch(1, 100, 9, 64).grid_x == 2);  /* ragged last tile */
    CHECK(fl_cuda_attn_mma_supported(64) && fl_cuda_attn_mma_supported(128) && !fl_cuda_attn_mma_supported(96));
    fl_cuda_launch s = fl_cuda_attn_simple_launch(2, 2048, 4, 128);
    CHECK_EQ_INT(s.grid_x, 2048 / FL_ATTN_SIMPLE_WARPS);
    CHECK_EQ_INT(s.threads, 32 * FL_ATTN_SIMPLE_WARPS);
    CHECK(s.smem_bytes <= 48 * 1024);                    /* no opt-in needed up to HS 128 */
    CHECK(fl_cuda_attn_simple_launch(1, 7, 1, 256).smem_bytes > 48 * 1024); /* HS 256 opts in */
}

TEST(cuda_plan_attention_backward) {
    /* Qwen2.5-1.5B at 4 x 2048: 12 query heads over 2 kv heads of 128 */
    fl_cuda_attn_bwd_plan p = fl_cuda_attn_bwd_make_plan(4, 2048, 12, 2, 128);
    CHECK_EQ_INT(p.dkv.grid_x, 2048 / FL_ATTN_BWD_BKV);
    CHECK_EQ_INT(p.dkv.grid_y, 12); /* one block per QUERY head: the causal grid stays balanced */
    CHECK_EQ_INT(p.dkv.grid_z, 4);
    CHECK_EQ_INT(p.dq.grid_x, 2048 / FL_ATTN_BWD_BQ);
    CHECK_EQ_INT(p.dq.grid_y, 12);
    CHECK_EQ_INT(p.dkv.threads, 128); /* 4 warps x 16 rows = the 64-row tiles */
    CHECK_EQ_INT(p.dq.threads, 128);
    CHECK_EQ_INT(4 * 16, FL_ATTN_BWD_BKV);
    CHECK_EQ_INT(4 * 16, FL_ATTN_BWD_BQ);
    CHECK(p.dkv_q_tile % FL_ATTN_SEG_CHUNK == 0 && p.dkv_q_tile % 16 == 0 && FL_ATTN_BWD_BQ % FL_ATTN_SEG_CHUNK == 0);
    /* K, V resident + two Q and dO buffers of 64 x 128 bf16, plus 3 x 2 x 64 per-query scalars */
    CHECK_EQ_INT(p.dkv.smem_bytes, (2 * 64 + 4 * 64) * 128 * 2 + 2 * 64 * 12);
    CHECK_EQ_INT(p.dq.smem_bytes, (2 * 64 + 4 * 64) * 128 * 2);
    /* sm_90: at most 227 KiB per block; two blocks (1 KiB reserved each) share a 228 KiB SM */
    CHECK(p.dkv.smem_bytes <= 227 * 1024 && 2 * (p.dkv.smem_bytes + 1024) <= 228 * 1024);
    CHECK(p.dq.smem_bytes <= 227 * 1024 && 2 * (p.dq.smem_bytes + 1024) <= 228 * 1024);
    CHECK_EQ_INT(p.seg_chunks, 2048 / FL_ATTN_SEG_CHUNK);
    CHECK_EQ_INT(p.prep.grid_x, p.seg_chunks);
    CHECK_EQ_INT(p.prep.grid_z, 4);
    /* GQA: f32 partials per query head, and the reduce covers every 8 dims of every (token, kv head) */
    CHECK(p.gqa_partials);
    CHECK((size_t)p.reduce.grid_x * p.reduce.threads >= (size_t)4 * 2048 * 2 * 128 / 8);
    /* scratch: L2 and D (B, NH, T) f32, seg minima, two partial buffers (B, T, NH, HS) f32; 256-aligned,
     * in order, no overlap */
    size_t rows = (size_t)4 * 12 * 2048, part = (size_t)4 * 2048 * 12 * 128 * 4;
    CHECK_EQ_INT(p.off_L2, 0);
    CHECK_EQ_INT(p.off_D, rows * 4);
    CHECK_EQ_INT(p.off_seg_min, 2 * rows * 4);
    CHECK(p.off_dk_part >= p.off_seg_min + (size_t)4 * p.seg_chunks * 4 && p.off_dk_part % 256 == 0);
    CHECK_EQ_INT(p.off_dv_part, p.off_dk_part + part);
    CHECK_EQ_INT(p.scratch_bytes, p.off_dv_part + part);

    /* MHA: dK/dV written directly, no partials, no reduce */
    fl_cuda_attn_bwd_plan m = fl_cuda_attn_bwd_make_plan(2, 200, 4, 4, 128);
    CHECK(!m.gqa_partials);
    CHECK_EQ_INT(m.reduce.grid_x, 0);
    CHECK_EQ_INT(m.scratch_bytes, m.off_dk_part);
    /* odd T: ragged last tiles and chunks */
    fl_cuda_attn_bwd_plan o = fl_cuda_attn_bwd_make_plan(3, 77, 6, 1, 64);
    CHECK_EQ_INT(o.dkv.grid_x, 2);
    CHECK_EQ_INT(o.dq.grid_x, 2);
    CHECK_EQ_INT(o.seg_chunks, 3);
    CHECK_EQ_INT(o.dkv.smem_bytes, (2 * 64 + 4 * 64) * 64 * 2 + 2 * 64 * 12);
    CHECK(o.dkv.smem_bytes > 48 * 1024); /* opts in to more than 48 KiB: the launcher sets the attribute */
}

TEST(cuda_plan_memory_presets) {
    /* Every benchmark preset at 4 x 2048, rank 16, all seven projections, fits an 80 GB card
     * without recompute (the bar for Qwen2.5-7B), and the categories add up. The memory
     * model is plan/plan.c's, built on this file's sizes (LM-head chunk, workspace, staging). */
    const char *presets[] = {"qwen2.5-1.5b", "smollm2-1.7b", "tinyllama-1.1b", "qwen2.5-7b"};
    fl_lora_config lc = fl_lora_config_default();
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        fl_model_config cfg;
        CHECK(fl_config_preset(&cfg, presets[i]) == 0);
        fl_plan_memory p = fl_plan_memory_compute(&cfg, &lc, 4, 2048, FL_TARGET_CUDA, 0);
        double sum = 0;
#define X(field, label) sum += p.field;
        FL_PLAN_MEM_CATEGORIES(X)
#undef X
        CHECK(p.total == sum);
        CHECK(p.lora_params == p.lora_grads / 4 * 6);     /* f32 master + bf16 copy vs f32 grads */
        CHECK_MSG(p.total < 80e9 * 0.95, "%s: plan %.1f GB does not fit 80 GB", presets[i], p.total / 1e9);
        /* the whole batch's bf16 logits (8192 x V x 2: 2.5 GB for Qwen2.5's vocabulary) */
        double logits = 8192.0 * cfg.vocab_size * 2;
        CHECK(p.logits > logits && p.logits < logits + (double)((size_t)1 << 30));
    }
    fl_model_config q7;
    fl_config_preset(&q7, "qwen2.5-7b");
    fl_plan_memory p = fl_plan_memory_compute(&q7, &lc, 4, 2048, FL_TARGET_CUDA, 0);
    CHECK_MSG(p.weights > 15e9 && p.weights < 16e9, "qwen2.5-7b weights %.2f GB", p.weights / 1e9);
}

/* The per-row error (cuda_compare.h): one wrong row among 8,192 passes a 2e-2 relative L2 over the
 * tensor but not the row check, and the check names that row and head; strided views; NaN. */
TEST(cuda_plan_worst_row_error_finds_one_wrong_row) {
    enum { N = 1024, HEADS = 8, COLS = 16, LD = HEADS * COLS + 5 };
    float *want = malloc(sizeof(float) * N * LD), *got = malloc(sizeof(float) * N * LD);
    for (size_t i = 0; i < (size_t)N * LD; i++) want[i] = got[i] = (float)sin(0.37 * (double)i) + 0.5f;
    for (size_t n = 0; n < N; n++)
        for (int i = HEADS * COLS; i < LD; i++) got[n * LD + i] = 1e9f; /* outside the view: ignored */
    fl_row_err e = fl_worst_row_err(got, want, N, HEADS, COLS, LD);
    CHECK(e.err == 0);
    /* small noise everywhere: a small row error */
    for (size_t n = 0; n < N; n++)
        for (int j = 0; j < HEADS * COLS; j++) got[n * LD + j] = want[n * LD + j] * (1 + 2e-3f * (float)((int)((n + j) % 3) - 1));
    CHECK(fl_worst_row_err(got, want, N, HEADS, COLS, LD).err < 5e-3);
    /* row 300, head 5 replaced by another row's values: relative L2 over the tensor stays ~1/64 */
    for (int i = 0; i < COLS; i++) got[300 * LD + 5 * COLS + i] = want[7 * LD + 2 * COLS + i];
    double num = 0, den = 0;
    for (size_t n = 0; n < N; n++)
        for (int j = 0; j < HEADS * COLS; j++) {
            double d = got[n * LD + j] - want[n * LD + j];
            num += d * d;
            den += (double)want[n * LD + j] * want[n * LD + j];
        }
    CHECK_MSG(sqrt(num / den) < 2e-2, "relative L2 %.3g", sqrt(num / den)); /* the old check passes it */
    e = fl_worst_row_err(got, want, N, HEADS, COLS, LD);
    CHECK_MSG(e.err > 0.3 && e.row == 300 && e.head == 5, "worst %.3g at row %zu head %d", e.err, e.row, e.head);
    got[10 * LD + 3] = NAN;
    e = fl_worst_row_err(got, want, N, HEADS, COLS, LD);
    CHECK(isinf(e.err) && e.row == 10 && e.head == 0);
    free(want);
    free(got);
}
