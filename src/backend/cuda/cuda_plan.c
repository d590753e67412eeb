/* cuda_plan.c — launch shapes, LM-head chunking, attention tiling and NF4 tiles (see cuda_plan.h).
 * Plain C with no CUDA dependency: compiled into every build and tested on the CPU. */
#include "backend/cuda/cuda_plan.h"


unsigned fl_cuda_grid_1d(size_t n, int threads, int per_thread, unsigned max_blocks) {
    if (n == 0) return 0;
    size_t per_block = (size_t)threads * (size_t)(per_thread > 0 ? per_thread : 1);
    size_t blocks = (n + per_block - 1) / per_block;
    if (max_blocks == 0) max_blocks = 1;
    return blocks > max_blocks ? max_blocks : (unsigned)blocks;
}

size_t fl_cuda_lm_head_budget(void) { return FL_CUDA_LM_HEAD_BUDGET; }

size_t fl_cuda_lm_head_chunk_rows(size_t N, int V, size_t budget_bytes) {
    if (N == 0 || V <= 0) return 0;
    size_t most = budget_bytes / ((size_t)V * 2); /* bf16 logits */
    if (most < 64) most = 64;                     /* tiny budgets or huge V: still a useful GEMM */
    if (N <= most) return N;
    size_t chunks = (N + most - 1) / most;
    size_t rows = (N + chunks - 1) / chunks;      /* equal chunks: no short last GEMM */
    size_t rounded = (rows + 63) / 64 * 64;       /* GEMM-friendly M */
    return rounded <= most ? rounded : rows;
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

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

fl_cuda_attn_bwd_plan fl_cuda_attn_bwd_make_plan(int B, int T, int NH, int NKV, int HS) {
    fl_cuda_attn_bwd_plan p;
    size_t rows = (size_t)B * NH * T;
    /* 64 queries per dK/dV step at both head sizes: the two 16 x 64 strips (Sᵀ, dPᵀ) plus the dK
     * and dV accumulators of 16 keys fit the register file without spills (nvcc 13, sm_90: 255
     * registers at HS 128, 165 at HS 64) */
    p.dkv_q_tile = 64;
    p.seg_chunks = (T + FL_ATTN_SEG_CHUNK - 1) / FL_ATTN_SEG_CHUNK;
    p.gqa_partials = NH > NKV;

    p.prep.grid_x = (unsigned)p.seg_chunks;
    p.prep.grid_y = 1;
    p.prep.grid_z = (unsigned)B;
    p.prep.threads = 256;
    p.prep.smem_bytes = 0;

    p.dkv.grid_x = (unsigned)((T + FL_ATTN_BWD_BKV - 1) / FL_ATTN_BWD_BKV);
    p.dkv.grid_y = (unsigned)NH;
    p.dkv.grid_z = (unsigned)B;
    p.dkv.threads = 128;
    /* K and V tiles (resident) + double-buffered Q and dO tiles, bf16; double-buffered per-query
     * log2-lse, D and seg_start (4 bytes each) */
    p.dkv.smem_bytes = ((size_t)2 * FL_ATTN_BWD_BKV + (size_t)4 * p.dkv_q_tile) * (size_t)HS * 2 +
                       (size_t)2 * p.dkv_q_tile * 3 * 4;

    p.dq.grid_x = (unsigned)((T + FL_ATTN_BWD_BQ - 1) / FL_ATTN_BWD_BQ);
    p.dq.grid_y = (unsigned)NH;
    p.dq.grid_z = (unsigned)B;
    p.dq.threads = 128;
    /* Q and dO tiles (resident) + double-buffered K and V tiles, bf16 */
    p.dq.smem_bytes = ((size_t)2 * FL_ATTN_BWD_BQ + (size_t)4 * FL_ATTN_BWD_BKV) * (size_t)HS * 2;

    /* one thread per 8 dims of a (token, kv head) row: sums its group's partials for dK and dV */
    p.reduce.grid_x = p.gqa_partials ? fl_cuda_grid_1d((size_t)B * T * NKV * (HS / 8), 256, 1, 65535u * 16) : 0;
    p.reduce.grid_y = p.reduce.grid_z = 1;
    p.reduce.threads = 256;
    p.reduce.smem_bytes = 0;

    size_t off = 0;
    p.off_L2 = off;
    off += align256(rows * sizeof(float));
    p.off_D = off;
    off += align256(rows * sizeof(float));
    p.off_seg_min = off;
    off += align256((size_t)B * p.seg_chunks * sizeof(int32_t));
    size_t part = p.gqa_partials ? align256((size_t)B * T * NH * HS * sizeof(float)) : 0;
    p.off_dk_part = off;
    off += part;
    p.off_dv_part = off;
    off += part;
    p.scratch_bytes = off;
    return p;
}

int64_t fl_cuda_nf4_tile_rows(int64_t rows, int64_t cols) {
    int64_t fit = (int64_t)(FL_CUDA_NF4_TILE_BYTES / (2 * (size_t)(cols > 0 ? cols : 1)));
    if (fit < 1) fit = 1;
    return fit < rows ? fit : rows;
}
