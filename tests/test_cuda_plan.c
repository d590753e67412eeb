/* test_cuda_plan.c — the CUDA backend's host-side arithmetic (backend/cuda/cuda_plan.c), which
 * compiles and runs in every build, GPU or not: launch grids, the LM-head chunk sizing, the
 * attention tiling and the memory plan of the benchmark presets. */
#include "backend/cuda/cuda_plan.h"
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

TEST(cuda_plan_lm_head_chunk_fits_budget) {
    /* Qwen2.5's 152064 vocabulary at 4 x 4096 = 16k tokens: bf16 logits of the whole batch would be
     * 4.6 GiB; the chunk keeps them within the 256 MiB budget, a multiple of 64 rows. */
    size_t N = 16384, budget = FL_CUDA_LM_HEAD_BUDGET;
    size_t rows = fl_cuda_lm_head_chunk_rows(N, 152064, budget);
    CHECK(rows >= 64 && rows % 64 == 0);
    CHECK(rows * 152064 * 2 <= budget);
    CHECK_EQ_INT(rows, 832);
    size_t scratch = fl_cuda_lm_head_scratch_bytes(N, 152064, budget);
    CHECK_MSG(scratch < ((size_t)300 << 20), "LM-head scratch %.1f MiB >= 300 MiB", scratch / 1048576.0);
    /* small vocabularies: the chunk is the whole batch when it fits */
    CHECK_EQ_INT(fl_cuda_lm_head_chunk_rows(8192, 32000, budget), 4160); /* 65 x 64 rows, 254 MiB */
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

TEST(cuda_plan_memory_presets) {
    /* Every benchmark preset at 4 x 2048, rank 16, all seven projections, fits an 80 GB card
     * without recompute (the bar for Qwen2.5-7B), and the categories add up. */
    const char *presets[] = {"qwen2.5-1.5b", "smollm2-1.7b", "tinyllama-1.1b", "qwen2.5-7b"};
    fl_lora_config lc = fl_lora_config_default();
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        fl_model_config cfg;
        CHECK(fl_config_preset(&cfg, presets[i]) == 0);
        fl_cuda_memory_plan p = fl_cuda_plan_memory(&cfg, &lc, 4, 2048);
        CHECK_EQ_INT(p.total, p.weights + p.lora + p.grads + p.optimizer + p.activations + p.scratch);
        CHECK_EQ_INT(p.weights, (size_t)fl_config_total_params(&cfg) * 2);
        CHECK(p.lora == p.grads / 4 * 6);                 /* f32 master + bf16 copy vs f32 grads */
        CHECK_MSG(p.total < (size_t)80e9 * 0.95, "%s: plan %.1f GB does not fit 80 GB", presets[i], p.total / 1e9);
        CHECK(p.scratch < ((size_t)512 << 20));
    }
    fl_model_config q7;
    fl_config_preset(&q7, "qwen2.5-7b");
    fl_cuda_memory_plan p = fl_cuda_plan_memory(&q7, &lc, 4, 2048);
    CHECK_MSG(p.weights > (size_t)15e9 && p.weights < (size_t)16e9, "qwen2.5-7b weights %.2f GB", p.weights / 1e9);
}
