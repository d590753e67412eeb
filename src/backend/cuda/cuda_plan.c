/* cuda_plan.c — launch shapes, LM-head chunking and the GPU memory plan (see cuda_plan.h).
 * Plain C with no CUDA dependency: compiled into every build and tested on the CPU. */
#include "backend/cuda/cuda_plan.h"

#include "engine/activations.h"

unsigned fl_cuda_grid_1d(size_t n, int threads, int per_thread, unsigned max_blocks) {
    if (n == 0) return 0;
    size_t per_block = (size_t)threads * (size_t)(per_thread > 0 ? per_thread : 1);
    size_t blocks = (n + per_block - 1) / per_block;
    if (max_blocks == 0) max_blocks = 1;
    return blocks > max_blocks ? max_blocks : (unsigned)blocks;
}

size_t fl_cuda_lm_head_chunk_rows(size_t N, int V, size_t budget_bytes) {
    if (N == 0 || V <= 0) return 0;
    size_t row_bytes = (size_t)V * 2; /* bf16 logits */
    size_t rows = budget_bytes / row_bytes;
    if (rows >= 64) rows = rows / 64 * 64; /* GEMM-friendly M */
    if (rows < 64) rows = 64;              /* tiny budgets or huge V: still a useful GEMM */
    return rows < N ? rows : N;
}

size_t fl_cuda_lm_head_scratch_bytes(size_t N, int V, size_t budget_bytes) {
    size_t rows = fl_cuda_lm_head_chunk_rows(N, V, budget_bytes);
    size_t logits = (rows * (size_t)V * 2 + 255) / 256 * 256;
    size_t losses = (N * sizeof(float) + 255) / 256 * 256;
    return logits + losses;
}

int fl_cuda_attn_mma_supported(int HS) { return HS == 64 || HS == 128; }

fl_cuda_launch fl_cuda_attn_forward_launch(int B, int T, int NH, int HS) {
    fl_cuda_launch l;
    l.grid_x = (unsigned)((T + FL_ATTN_BQ - 1) / FL_ATTN_BQ);
    l.grid_y = (unsigned)NH;
    l.grid_z = (unsigned)B;
    l.threads = 128;
    /* Q tile (BQ x HS) + one K and one V tile (BK x HS each), bf16: 48 KiB at HS 128 */
    l.smem_bytes = (size_t)(FL_ATTN_BQ + 2 * FL_ATTN_BK) * (size_t)HS * 2;
    return l;
}

fl_cuda_launch fl_cuda_attn_simple_launch(int B, int T, int heads, int HS) {
    fl_cuda_launch l;
    l.grid_x = (unsigned)((T + FL_ATTN_SIMPLE_WARPS - 1) / FL_ATTN_SIMPLE_WARPS);
    l.grid_y = (unsigned)heads;
    l.grid_z = (unsigned)B;
    l.threads = 32 * FL_ATTN_SIMPLE_WARPS;
    /* two f32 tiles of 32 rows x (HS+1) (padded: conflict-free per-lane rows) streamed through
     * shared memory, plus two HS-vectors per warp (its own query / key row and dout / v row) */
    l.smem_bytes = ((size_t)2 * 32 * (size_t)(HS + 1) + (size_t)FL_ATTN_SIMPLE_WARPS * 2 * HS) * sizeof(float);
    return l;
}

size_t fl_cuda_base_elements(const fl_model_config *cfg) { return (size_t)fl_config_total_params(cfg); }

fl_cuda_memory_plan fl_cuda_plan_memory(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T) {
    fl_cuda_memory_plan p;
    size_t n_lora = fl_lora_param_count(cfg, lc), N = (size_t)B * T;
    p.weights = fl_cuda_base_elements(cfg) * 2;
    p.lora = n_lora * (sizeof(float) + 2);
    p.grads = n_lora * sizeof(float);
    p.optimizer = 2 * n_lora * sizeof(float);
    p.activations = fl_activations_bytes(cfg, lc->rank, B, T, 2);
    p.scratch = fl_cuda_lm_head_scratch_bytes(N, cfg->vocab_size, FL_CUDA_LM_HEAD_BUDGET) + FL_CUDA_WORKSPACE_BYTES +
                FL_CUDA_STAGING_FLOATS * sizeof(float) + ((size_t)1 << 20) /* reductions, RoPE table */;
    p.total = p.weights + p.lora + p.grads + p.optimizer + p.activations + p.scratch;
    return p;
}
