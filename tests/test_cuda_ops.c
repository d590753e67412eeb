/* test_cuda_ops.c — the CUDA backend against the CPU reference: every op on random inputs (whole
 * models: test_cuda_model.c).
 *
 * Compiled only in builds with CUDA (FL_HAVE_CUDA); every test SKIPs when fl_backend_cuda()
 * returns NULL (no GPU or driver), so `make test` stays green on CPU machines.
 *
 * Inputs are drawn in f32, rounded to bf16 on the host, and given to both backends, so the
 * comparison measures only the CUDA side's bf16 storage of outputs and intermediates. Tolerances
 * (relative L2 error ‖cuda − cpu‖ / ‖cpu‖, written next to each check): 1e-2 for bf16 outputs of one
 * op (bf16 keeps 8 bits: 2^-9 = 2e-3 per element, plus f32-accumulation-order noise), 2e-2 for
 * results that pass through a bf16 intermediate (attention's P, the LM head's logits), 1e-5 for pure
 * f32 outputs (AdamW, Σx²), and exact equality for the dropout mask (same hash). */
#ifdef FL_HAVE_CUDA
#include "cuda_test_util.h"
#include "engine/model.h"

/* ---- op tests ---- */

TEST(cuda_available_or_skip) {
    CUDA_OR_SKIP(cu);
    printf("    device: %s (sm_%d), attention %s\n", fl_cuda_device_name(), fl_cuda_compute_capability(),
           fl_cuda_attention_variant());
    CHECK_EQ_INT(cu->act_size, 2);
}

TEST(cuda_op_embedding) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    int V = 1000, C = 136; /* C not a multiple of 8 exercises the scalar path too */
    for (int pass = 0; pass < 2; pass++, C = 256) {
        size_t N = 77;
        float *table_h = rand_bf16((size_t)V * C, 1, -1, 1);
        int32_t ids[77];
        for (size_t i = 0; i < N; i++) ids[i] = (int32_t)(fl_hash64(i) % V);
        pair table = pair_act(cu, table_h, (size_t)V * C), out = pair_act(cu, NULL, N * C);
        int32_t *ids_d = dev_i32(cu, ids, N);
        cpu->embedding_forward(out.cpu, ids, table.cpu, N, C);
        cu->embedding_forward(out.dev, ids_d, table.dev, N, C);
        float *got = down_act(cu, &out);
        CHECK_REL(got, out.cpu, N * C, 0.0); /* a gather: exact */
        free(got); free(table_h); cu->free(ids_d);
        pair_free(cu, &table); pair_free(cu, &out);
    }
}

/* The ops that take row strides run with strides wider than their rows (backend.h): the
 * padding columns start equal on both sides, so comparing whole buffers also checks that neither
 * side writes them. Strides that are multiples of 8 take the 16-byte vector paths, others not. */

TEST(cuda_op_rmsnorm) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    size_t N = 300;
    int Cs[3] = {1536, 100, 576}, lds[3] = {1536, 100, 576 + 48}; /* the last: [x | x·Aᵀ] of a fused group */
    for (int ci = 0; ci < 3; ci++) {
        int C = Cs[ci], ld = lds[ci];
        float *x_h = rand_bf16(N * C, 2, -2, 2), *w_h = rand_bf16(C, 3, 0.5f, 1.5f), *dy_h = rand_bf16(N * ld, 4, -1, 1);
        float *acc_h = rand_bf16(N * C, 5, -1, 1), *y0_h = rand_bf16(N * ld, 6, -1, 1);
        pair x = pair_act(cu, x_h, N * C), w = pair_act(cu, w_h, C), y = pair_act(cu, y0_h, N * ld);
        pair rstd = pair_f32(cu, NULL, N), dy = pair_act(cu, dy_h, N * ld), dx = pair_act(cu, acc_h, N * C);
        cpu->rmsnorm_forward(y.cpu, rstd.cpu, x.cpu, w.cpu, 1e-6f, N, C, ld);
        cu->rmsnorm_forward(y.dev, rstd.dev, x.dev, w.dev, 1e-6f, N, C, ld);
        float *y_g = down_act(cu, &y), *r_g = down_f32(cu, &rstd);
        CHECK_REL(y_g, y.cpu, N * ld, 1e-2);  /* bf16 output */
        CHECK_REL(r_g, rstd.cpu, N, 1e-5);    /* f32 from the same bf16 inputs */
        cpu->rmsnorm_backward(dx.cpu, dy.cpu, x.cpu, w.cpu, rstd.cpu, N, C, ld); /* += onto acc_h */
        cu->rmsnorm_backward(dx.dev, dy.dev, x.dev, w.dev, rstd.dev, N, C, ld);
        float *dx_g = down_act(cu, &dx);
        CHECK_REL(dx_g, dx.cpu, N * C, 1e-2);
        free(y_g); free(r_g); free(dx_g); free(x_h); free(w_h); free(dy_h); free(acc_h); free(y0_h);
        pair_free(cu, &x); pair_free(cu, &w); pair_free(cu, &y); pair_free(cu, &rstd); pair_free(cu, &dy);
        pair_free(cu, &dx);
    }
}

/* the three matmuls of one (N, IC, OC) problem vs the CPU: forward (bias optional, beta = 1: the
 * LoRA B product lands on the base output), input gradient (beta = 1), f32 weight gradient. With
 * pads > 0 every operand is a column block of a wider buffer, as the K-concatenated projections use
 * them: x (N, IC + pad[0]), weight (OC, IC + pad[1]), out (N, OC + pad[2]); whole buffers are
 * compared, so the padding (equal on both sides at the start) must stay untouched. */
static void matmul_case(const fl_backend *cu, size_t N, int IC, int OC, const int pad[3], uint64_t seed, int with_bias) {
    const fl_backend *cpu = fl_backend_cpu();
    int ldx = IC + pad[0], ldw = IC + pad[1], ldo = OC + pad[2];
    float *x_h = rand_bf16(N * ldx, 10 + seed, -1, 1), *w_h = rand_bf16((size_t)OC * ldw, 20 + seed, -0.1f, 0.1f);
    float *b_h = rand_bf16(OC, 30 + seed, -1, 1), *o_h = rand_bf16(N * ldo, 40 + seed, -1, 1);
    float *dw_h = rand_bf16((size_t)OC * IC, 50 + seed, -1, 1);
    pair x = pair_act(cu, x_h, N * ldx), w = pair_act(cu, w_h, (size_t)OC * ldw), bias = pair_act(cu, b_h, OC);
    pair out = pair_act(cu, o_h, N * ldo), dinp = pair_act(cu, x_h, N * ldx), dw = pair_f32(cu, dw_h, (size_t)OC * IC);
    cpu->matmul_forward(out.cpu, x.cpu, w.cpu, with_bias ? bias.cpu : NULL, 0.5f, 1.0f, N, IC, OC, ldo, ldx, ldw);
    cu->matmul_forward(out.dev, x.dev, w.dev, with_bias ? bias.dev : NULL, 0.5f, 1.0f, N, IC, OC, ldo, ldx, ldw);
    float *g = down_act(cu, &out);
    CHECK_MSG(rel_err(g, out.cpu, N * ldo) <= 1e-2, "forward %zu x %d -> %d (ld %d/%d/%d): rel err %.3g", N, IC, OC,
              ldo, ldx, ldw, rel_err(g, out.cpu, N * ldo));
    free(g);
    cpu->matmul_backward_input(dinp.cpu, out.cpu, w.cpu, 2.0f, 1.0f, N, IC, OC, ldx, ldo, ldw);
    cu->matmul_backward_input(dinp.dev, out.dev, w.dev, 2.0f, 1.0f, N, IC, OC, ldx, ldo, ldw);
    g = down_act(cu, &dinp);
    CHECK_REL(g, dinp.cpu, N * ldx, 1.5e-2); /* its input `out` is itself a bf16 result */
    free(g);
    cpu->matmul_backward_weight(dw.cpu, out.cpu, x.cpu, 0.25f, N, IC, OC, ldo, ldx);
    cu->matmul_backward_weight(dw.dev, out.dev, x.dev, 0.25f, N, IC, OC, ldo, ldx);
    g = down_f32(cu, &dw);
    CHECK_REL(g, dw.cpu, (size_t)OC * IC, 1e-2);
    free(g);
    free(x_h); free(w_h); free(b_h); free(o_h); free(dw_h);
    pair_free(cu, &x); pair_free(cu, &w); pair_free(cu, &bias); pair_free(cu, &out); pair_free(cu, &dinp);
    pair_free(cu, &dw);
}

TEST(cuda_op_matmul) {
    CUDA_OR_SKIP(cu);
    /* base-projection shapes, a LoRA rank-16 pair, odd sizes; the last two with every operand a
     * column block of a wider buffer (pads of x, weight, out) */
    static const int pad0[3] = {0, 0, 0}, pad_fused[3] = {8, 48, 16}, pad_odd[3] = {3, 5, 1};
    int shapes[][3] = {{512, 1536, 256}, {512, 1536, 16}, {512, 16, 1536}, {97, 72, 40}, {384, 624, 960}, {97, 72, 40}};
    const int *pads[6] = {pad0, pad0, pad0, pad0, pad_fused, pad_odd};
    for (size_t s = 0; s < 6; s++) matmul_case(cu, (size_t)shapes[s][0], shapes[s][1], shapes[s][2], pads[s], s, 1);
}

/* Rank-4 LoRA products have 8-byte leading dimensions, for which cuBLASLt may find no algorithm:
 * then cublasGemmEx runs them. Both paths: as the heuristic decides, and forced (new shapes, so no
 * cached plan decides for the test), contiguous and as the K-concatenated projections stride them
 * (x·Aᵀ written into the 12 reserved columns of a (N, 1536 + 12) input; [x | x·Aᵀ]·[W | s·B]ᵀ with
 * the q/k/v bias, which the fallback adds after the GEMM). */
TEST(cuda_op_gemm_ex_fallback) {
    CUDA_OR_SKIP(cu);
    static const int pad0[3] = {0, 0, 0}, pad_xa[3] = {0, 0, 1536}, pad_cat[3] = {0, 0, 4}, pad_odd[3] = {3, 5, 1};
    matmul_case(cu, 333, 1536, 4, pad0, 7, 0); /* LoRA A: x (N, C) -> (N, 4) */
    matmul_case(cu, 333, 4, 1536, pad0, 8, 0); /* LoRA B: (N, 4) -> (N, C) */
    setenv("FL_CUDA_FORCE_GEMM_EX", "1", 1);
    matmul_case(cu, 335, 1536, 4, pad0, 9, 0);
    matmul_case(cu, 335, 4, 1536, pad0, 10, 0);
    matmul_case(cu, 335, 72, 40, pad0, 11, 0);
    matmul_case(cu, 337, 1536, 12, pad_xa, 12, 0);     /* x·A_gᵀ into the reserved columns */
    matmul_case(cu, 337, 1536 + 12, 896, pad_cat, 13, 1); /* the concatenated product + bias, out with a gap */
    matmul_case(cu, 339, 72, 40, pad_odd, 14, 0);
    unsetenv("FL_CUDA_FORCE_GEMM_EX");
}

/* The LoRA B compute copies written into weights' reserved columns: f32 -> bf16, scaled, strided,
 * many blocks in one call — 300 of them, more than one launch takes (cuda_memory.cu), of heights 1
 * to 40, block j in the next rows of a (rows, 624) weight, at column 576 + 16·(j % 3). */
TEST(cuda_op_cast_to_weight_2d) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    enum { BLOCKS = 300 };
    size_t rows = 40 * BLOCKS;
    int cols = 16, ld = 624;
    float *src_h = rand_bf16(rows * cols, 55, -1, 1), *dst_h = rand_bf16(rows * ld, 56, -1, 1);
    pair src = pair_f32(cu, src_h, rows * cols), dst = pair_act(cu, dst_h, rows * ld);
    fl_cast_block b_cpu[BLOCKS], b_cu[BLOCKS];
    for (size_t j = 0, r0 = 0; j < BLOCKS; j++) {
        size_t h = 1 + j * 37 % 40, col = 576 + 16 * (j % 3);
        b_cpu[j] = (fl_cast_block){(float *)dst.cpu + r0 * ld + col, src.cpu + r0 * cols, h, ld};
        b_cu[j] = (fl_cast_block){(char *)dst.dev + 2 * (r0 * ld + col), (float *)src.dev + r0 * cols, h, ld};
        r0 += h;
    }
    cpu->cast_to_weight_2d(b_cpu, BLOCKS, 3.5f, cols);
    cu->cast_to_weight_2d(b_cu, BLOCKS, 3.5f, cols);
    float *g = down_act(cu, &dst);
    CHECK_REL(g, dst.cpu, rows * ld, 4e-3); /* bf16 rounding of the written blocks; the rest untouched */
    free(g); free(src_h); free(dst_h);
    pair_free(cu, &src); pair_free(cu, &dst);
}

/* copy_2d: Qwen3's q columns out of q/k/v rows, the per-head norm (rows of HS), and back in place
 * (engine/model.c): exact copies; the norm within bf16's bound; the k and v columns untouched. */
TEST(cuda_op_copy_2d_per_head_norm) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    const int HSs[2] = {16, 128};
    for (int hi = 0; hi < 2; hi++) {
        size_t N = 37, NH = 4, HS = (size_t)HSs[hi], QD = NH * HS, QKV = QD + 2 * 2 * HS;
        float *qkv_h = rand_bf16(N * QKV, 57, -2, 2), *w_h = rand_bf16(HS, 58, 0.5f, 1.5f);
        pair qkv = pair_act(cu, qkv_h, N * QKV), raw = pair_act(cu, NULL, N * QD), y = pair_act(cu, NULL, N * QD);
        pair w = pair_act(cu, w_h, HS), rstd = pair_f32(cu, NULL, N * NH);
        cpu->copy_2d(raw.cpu, QD * 4, qkv.cpu, QKV * 4, QD * 4, N);
        cu->copy_2d(raw.dev, QD * 2, qkv.dev, QKV * 2, QD * 2, N);
        float *g = down_act(cu, &raw);
        CHECK_REL(g, raw.cpu, N * QD, 0.0);
        free(g);
        cpu->rmsnorm_forward(y.cpu, rstd.cpu, raw.cpu, w.cpu, 1e-6f, N * NH, (int)HS, (int)HS);
        cu->rmsnorm_forward(y.dev, rstd.dev, raw.dev, w.dev, 1e-6f, N * NH, (int)HS, (int)HS);
        cpu->copy_2d(qkv.cpu, QKV * 4, y.cpu, QD * 4, QD * 4, N);
        cu->copy_2d(qkv.dev, QKV * 2, y.dev, QD * 2, QD * 2, N);
        g = down_act(cu, &qkv);
        CHECK_REL(g, qkv.cpu, N * QKV, 1e-2);
        for (size_t n = 0; n < N; n++)   /* k and v as they were */
            for (size_t c = QD; c < QKV; c++) CHECK(g[n * QKV + c] == qkv_h[n * QKV + c]);
        free(g); free(qkv_h); free(w_h);
        pair_free(cu, &qkv); pair_free(cu, &raw); pair_free(cu, &y); pair_free(cu, &w); pair_free(cu, &rstd);
    }
}

TEST(cuda_op_rope) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    /* HS, RD, scale: full heads (the 8-wide and the 1-wide kernel), Phi-4-mini's partial rotary
     * (96 of 128, longrope's factor 1.19), and a partial one that takes the 1-wide path (RD/2 = 12) */
    int HSs[5] = {64, 128, 40, 128, 32}, RDs[5] = {64, 128, 40, 96, 24};
    float scales[5] = {1.0f, 1.0f, 1.0f, 1.19f, 1.0f};
    for (int hi = 0; hi < 5; hi++) {
        /* q and k heads of a q/k/v row (H = 3 + 1 of 3 + 2·1 heads): v stays untouched */
        int HS = HSs[hi], RD = RDs[hi], H = 4, ld = 5 * HS;
        float sc = scales[hi];
        size_t N = 2 * 2048;
        float *x_h = rand_bf16(N * ld, 60 + hi, -1, 1), inv[64];
        int32_t *pos = malloc(sizeof(int32_t) * N);
        for (size_t i = 0; i < N; i++) pos[i] = (int32_t)(i % 2048);
        for (int j = 0; j < RD / 2; j++) inv[j] = 1.0f / powf(1e6f, (float)(2 * j) / RD);
        pair x = pair_act(cu, x_h, N * ld), f = pair_f32(cu, inv, RD / 2);
        int32_t *pos_d = dev_i32(cu, pos, N);
        cpu->rope_forward(x.cpu, pos, f.cpu, sc, N, H, HS, RD, ld);
        cu->rope_forward(x.dev, pos_d, f.dev, sc, N, H, HS, RD, ld);
        float *g = down_act(cu, &x);
        CHECK_REL(g, x.cpu, N * ld, 1e-2);
        for (size_t n = 0; n < N; n++)   /* the pass-through dims are the input, bit for bit */
            for (int h = 0; h < H; h++)
                for (int j = RD; j < HS; j++) CHECK(g[n * ld + h * HS + j] == x_h[n * ld + h * HS + j]);
        free(g);
        cpu->rope_backward(x.cpu, pos, f.cpu, sc, N, H, HS, RD, ld);
        cu->rope_backward(x.dev, pos_d, f.dev, sc, N, H, HS, RD, ld);
        g = down_act(cu, &x);
        CHECK_REL(g, x.cpu, N * ld, 1e-2);
        /* rotate then rotate back: the input again, times scale² on the rotated dims */
        if (sc == 1.0f) CHECK_REL(g, x_h, N * ld, 1.5e-2);
        free(g); free(x_h); free(pos); cu->free(pos_d);
        pair_free(cu, &x); pair_free(cu, &f);
    }
}

/* attention vs the CPU on B=2 rows, the second packed with three documents; q, k, v (and dq, dk,
 * dv) in one buffer with rows of q | k | v | `gap` unused columns, as the engine lays them out */
/* Beside the relative L2 over the tensor, every (query, head) row's own maximum error
 * (cuda_compare.h): one wrong row in thousands passes the L2 bound. Row bounds: 6e-2 of the row's
 * largest value for out (bf16 P and output: a few 2^-9), 0.1 for the gradients (they pass through
 * two bf16 operands); a wrong row is off by ~1. To be calibrated on the first device run. */
#define ROW_TOL_OUT 6e-2
#define ROW_TOL_GRAD 0.1
static void check_rows(const char *what, const float *got, const float *want, size_t N, int heads, int HS, size_t ld,
                       double tol) {
    fl_row_err e = fl_worst_row_err(got, want, N, heads, HS, ld);
    CHECK_MSG(e.err <= tol, "%s: worst row error %.3g (tol %.3g) at token row %zu, head %d", what, e.err, tol, e.row,
              e.head);
}

static void attention_window_case(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS,
                                  int gap, int window);
static void attention_cap_case(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS, int gap,
                               int window, float softcap);
void cuda_attention_case(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS, int gap) {
    attention_window_case(cu, variant, B, T, NH, NKV, HS, gap, 0);
}
static void attention_case(const fl_backend *cu, const char *variant, int T, int NH, int NKV, int HS, int gap) {
    cuda_attention_case(cu, variant, 2, T, NH, NKV, HS, gap);
}

/* B rows (odd ones packed with three documents); window > 0: a sliding window of that many
 * positions, both backends given engine/model.h's fl_window_key_start as seg_start; softcap > 0:
 * Gemma 2's attention soft-cap on both */
static void attention_window_case(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS,
                                  int gap, int window) {
    attention_cap_case(cu, variant, B, T, NH, NKV, HS, gap, window, 0.0f);
}
static void attention_cap_case(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS, int gap,
                               int window, float softcap) {
    const fl_backend *cpu = fl_backend_cpu();
    fl_cuda_set_attention_variant(variant);
    int QD = NH * HS, KVD = NKV * HS, ld = QD + 2 * KVD + gap;
    size_t N = (size_t)B * T, nq = N * QD, nqkv = N * ld;
    float *qkv_h = rand_bf16(nqkv, 70, -2, 2), *do_h = rand_bf16(nq, 73, -1, 1), *d0_h = rand_bf16(nqkv, 74, -1, 1);
    int32_t *seg = malloc(sizeof(int32_t) * N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) /* odd rows: documents [0,T/3) [T/3,T/2) [T/2,T) */
            seg[(size_t)b * T + t] = b % 2 == 0 ? 0 : t < T / 3 ? 0 : t < T / 2 ? T / 3 : T / 2;
    fl_window_key_start(seg, seg, (size_t)B, T, window); /* in place: each entry reads only itself */
    pair qkv = pair_act(cu, qkv_h, nqkv), out = pair_act(cu, NULL, nq), lse = pair_f32(cu, NULL, N * NH);
    pair dout = pair_act(cu, do_h, nq), dqkv = pair_act(cu, d0_h, nqkv);
    int32_t *seg_d = dev_i32(cu, seg, N);
    float *q = qkv.cpu, *k = q + QD, *v = k + KVD;
    char *qd = qkv.dev, *kd = qd + 2 * QD, *vd = kd + 2 * KVD;
    cpu->attention_forward(out.cpu, lse.cpu, q, k, v, seg, B, T, NH, NKV, HS, ld, softcap);
    cu->attention_forward(out.dev, lse.dev, qd, kd, vd, seg_d, B, T, NH, NKV, HS, ld, softcap);
    float *o_g = down_act(cu, &out), *l_g = down_f32(cu, &lse);
    CHECK_MSG(rel_err(o_g, out.cpu, nq) <= 2e-2, "%s T=%d W=%d NH=%d NKV=%d HS=%d ld=%d: out rel err %.3g", variant, T,
              window, NH, NKV, HS, ld, rel_err(o_g, out.cpu, nq));
    CHECK_MSG(rel_err(l_g, lse.cpu, N * NH) <= 1e-3, "%s HS=%d: lse rel err %.3g", variant, HS, rel_err(l_g, lse.cpu, N * NH));
    check_rows("attention out", o_g, out.cpu, N, NH, HS, (size_t)QD, ROW_TOL_OUT);
    /* backward from the CPU's forward output so both sides see the same `out` */
    cu->upload_act(out.dev, out.cpu, nq);
    cu->upload(lse.dev, lse.cpu, sizeof(float) * N * NH);
    float *dq = dqkv.cpu, *dk = dq + QD, *dv = dk + KVD;
    char *dqd = dqkv.dev, *dkd = dqd + 2 * QD, *dvd = dkd + 2 * KVD;
    cpu->attention_backward(dq, dk, dv, dout.cpu, out.cpu, lse.cpu, q, k, v, seg, B, T, NH, NKV, HS, ld, softcap);
    cu->attention_backward(dqd, dkd, dvd, dout.dev, out.dev, lse.dev, qd, kd, vd, seg_d, B, T, NH, NKV, HS, ld, softcap);
    float *d_g = down_act(cu, &dqkv);
    check_rows("dq", d_g, dqkv.cpu, N, NH, HS, (size_t)ld, ROW_TOL_GRAD);
    check_rows("dk", d_g + QD, dqkv.cpu + QD, N, NKV, HS, (size_t)ld, ROW_TOL_GRAD);
    check_rows("dv", d_g + QD + KVD, dqkv.cpu + QD + KVD, N, NKV, HS, (size_t)ld, ROW_TOL_GRAD);
    CHECK_MSG(rel_err(d_g, dqkv.cpu, nqkv) <= 2e-2, "%s HS=%d ld=%d dq|dk|dv (gap untouched) rel err %.3g", variant, HS, ld,
              rel_err(d_g, dqkv.cpu, nqkv));
    free(o_g); free(l_g); free(d_g);
    free(qkv_h); free(do_h); free(d0_h); free(seg); cu->free(seg_d);
    pair_free(cu, &qkv); pair_free(cu, &out); pair_free(cu, &lse); pair_free(cu, &dout); pair_free(cu, &dqkv);
    fl_cuda_set_attention_variant(getenv("FL_CUDA_ATTN"));
}

TEST(cuda_op_attention_mma) {
    CUDA_OR_SKIP(cu);
    attention_case(cu, "mma", 256, 8, 2, 64, 0);    /* GQA 4:1 */
    attention_case(cu, "mma", 200, 4, 4, 128, 8);   /* ragged last tile, MHA, a gap after v */
    attention_case(cu, "mma", 130, 6, 1, 128, 0);   /* MQA */
    attention_case(cu, "mma", 64, 4, 2, 64, 3);     /* ld not a multiple of 8: the simple kernels take it */
}

/* The tensor-core backward through the interface (variant "mma"), q, k, v in the columns of one
 * (N, ld) buffer as the engine's fused q|k|v projection lays them out, its last 8 columns a gap
 * that must stay untouched; dq, dk, dv likewise in one buffer poisoned with NaN first, so an
 * unwritten element fails. Odd rows hold documents of 37 tokens (boundaries inside tiles). Run
 * twice: bitwise equal (no atomics). Tolerance 2e-2 relative L2 as for the other results that pass
 * through bf16 intermediates: P and dS are rounded to bf16 as tensor-core operands (2^-9 each) and
 * summed in f32; dev/cuda/emulate_attention_bwd.py measures ~3e-3 on such shapes. */
void cuda_attn_bwd_qkv_case(const fl_backend *cu, int B, int T, int NH, int NKV, int HS, int docs);
void cuda_attn_bwd_qkv_case(const fl_backend *cu, int B, int T, int NH, int NKV, int HS, int docs) {
    const fl_backend *cpu = fl_backend_cpu();
    int QD = NH * HS, KVD = NKV * HS, width = QD + 2 * KVD, ld = width + 8;
    size_t N = (size_t)B * T, nq = N * QD, nqkv = N * ld;
    float *qkv_h = rand_bf16(nqkv, 170, -2, 2), *do_h = rand_bf16(nq, 173, -1, 1);
    float *out_h = malloc(sizeof(float) * nq), *lse_h = malloc(sizeof(float) * N * NH);
    float *ref = malloc(sizeof(float) * nqkv), *grad = malloc(sizeof(float) * nqkv);
    int32_t *seg = malloc(sizeof(int32_t) * N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) seg[(size_t)b * T + t] = docs && b % 2 ? t - t % 37 : 0;
    for (size_t n = 0; n < N; n++)
        for (int i = 0; i < ld; i++) {
            if (i >= width) qkv_h[n * ld + i] = 7.0f;
            grad[n * ld + i] = i < width ? NAN : 7.0f;
        }
    memcpy(ref, grad, sizeof(float) * nqkv);
    const float *q = qkv_h, *k = q + QD, *v = k + KVD;
    cpu->attention_forward(out_h, lse_h, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f);
    cpu->attention_backward(ref, ref + QD, ref + QD + KVD, do_h, out_h, lse_h, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f);

    char *qkv_d = cu->alloc(2 * nqkv), *dqkv_d = cu->alloc(2 * nqkv), *dqkv2_d = cu->alloc(2 * nqkv);
    void *do_d = cu->alloc(2 * nq), *out_d = cu->alloc(2 * nq);
    float *lse_d = cu->alloc(sizeof(float) * N * NH);
    int32_t *seg_d = dev_i32(cu, seg, N);
    cu->upload_act(qkv_d, qkv_h, nqkv);
    cu->upload_act(dqkv_d, grad, nqkv);
    cu->upload_act(dqkv2_d, grad, nqkv);
    cu->upload_act(do_d, do_h, nq);
    cu->upload_act(out_d, out_h, nq);
    cu->upload(lse_d, lse_h, sizeof(float) * N * NH);
    fl_cuda_set_attention_variant("mma");
    char *dqkv[2] = {dqkv_d, dqkv2_d};
    for (int r = 0; r < 2; r++)
        cu->attention_backward(dqkv[r], dqkv[r] + 2 * QD, dqkv[r] + 2 * (QD + KVD), do_d, out_d, lse_d, qkv_d,
                               qkv_d + 2 * QD, qkv_d + 2 * (QD + KVD), seg_d, B, T, NH, NKV, HS, ld, 0.0f);
    fl_cuda_set_attention_variant(getenv("FL_CUDA_ATTN"));
    float *got = malloc(sizeof(float) * nqkv);
    cu->download_act(got, dqkv_d, nqkv);
    double e[3];
    float *g_part = malloc(sizeof(float) * nq), *r_part = malloc(sizeof(float) * nq);
    for (int part = 0; part < 3; part++) { /* dq, dk, dv: relative L2 over their columns */
        int c0 = part == 0 ? 0 : part == 1 ? QD : QD + KVD, cols = part == 0 ? QD : KVD;
        for (size_t n = 0; n < N; n++) {
            memcpy(g_part + n * cols, got + n * ld + c0, sizeof(float) * cols);
            memcpy(r_part + n * cols, ref + n * ld + c0, sizeof(float) * cols);
        }
        e[part] = rel_err(g_part, r_part, N * cols);
    }
    free(g_part); free(r_part);
    check_rows("dq", got, ref, N, NH, HS, (size_t)ld, ROW_TOL_GRAD);
    check_rows("dk", got + QD, ref + QD, N, NKV, HS, (size_t)ld, ROW_TOL_GRAD);
    check_rows("dv", got + QD + KVD, ref + QD + KVD, N, NKV, HS, (size_t)ld, ROW_TOL_GRAD);
    size_t gap_changed = 0;
    for (size_t n = 0; n < N; n++)
        for (int i = width; i < ld; i++) gap_changed += got[n * ld + i] != 7.0f;
    CHECK_MSG(e[0] <= 2e-2 && e[1] <= 2e-2 && e[2] <= 2e-2,
              "B=%d T=%d NH=%d NKV=%d HS=%d docs=%d: rel err dq %.3g dk %.3g dv %.3g", B, T, NH, NKV, HS, docs, e[0], e[1],
              e[2]);
    CHECK_EQ_INT(gap_changed, 0);
    unsigned char *raw1 = malloc(2 * nqkv), *raw2 = malloc(2 * nqkv);
    cu->download(raw1, dqkv_d, 2 * nqkv);
    cu->download(raw2, dqkv2_d, 2 * nqkv);
    CHECK_MSG(memcmp(raw1, raw2, 2 * nqkv) == 0, "HS=%d: two runs differ (not deterministic)", HS);
    free(raw1); free(raw2); free(got); free(ref); free(grad);
    free(qkv_h); free(do_h); free(out_h); free(lse_h); free(seg);
    cu->free(qkv_d); cu->free(dqkv_d); cu->free(dqkv2_d); cu->free(do_d); cu->free(out_d); cu->free(lse_d);
    cu->free(seg_d);
}

TEST(cuda_op_attn_bwd_mma_fused_qkv) {
    CUDA_OR_SKIP(cu);
    cuda_attn_bwd_qkv_case(cu, 2, 77, 12, 2, 64, 1);   /* Qwen2.5-1.5B's group of 6, odd T, documents */
    cuda_attn_bwd_qkv_case(cu, 1, 200, 4, 4, 128, 0);  /* MHA: dK/dV written directly, ragged last tile */
    cuda_attn_bwd_qkv_case(cu, 3, 130, 6, 1, 128, 1);  /* MQA, B = 3 */
    cuda_attn_bwd_qkv_case(cu, 2, 256, 8, 2, 64, 1);   /* whole tiles, documents across tile borders */
    cuda_attn_bwd_qkv_case(cu, 1, 64, 2, 1, 128, 0);   /* one tile each way */
}

/* Sliding windows (Mistral): W = 1, W dividing no tile (the mma kernels' 64, the simple kernels' 32
 * and 8 warps), W past the first key tile, W >= T; over packed rows. The kernels are the ones above:
 * the window arrives as each query's first key, so the same bounds hold. */
TEST(cuda_op_attention_sliding_window) {
    CUDA_OR_SKIP(cu);
    static const char *variants[] = {"mma", "simple"};
    for (int i = 0; i < 2; i++) {
        attention_window_case(cu, variants[i], 2, 256, 8, 2, 64, 0, 1);
        attention_window_case(cu, variants[i], 2, 300, 4, 2, 64, 0, 37);
        attention_window_case(cu, variants[i], 2, 200, 4, 4, 128, 8, 100);
        attention_window_case(cu, variants[i], 1, 130, 6, 1, 128, 0, 130);
    }
    attention_window_case(cu, "simple", 2, 77, 4, 2, 96, 5, 9); /* a head size only the simple kernels take */
}

/* Gemma 2's attention soft-cap (0.5 binds on these scores, |s| up to ~|q||k|/√HS ≈ 10 with q, k in
 * [-2, 2]; 50 is Gemma 2's own), plain and windowed over packed rows, at head sizes the mma
 * kernels would take (the dispatch runs the simple kernels under a cap: cuda_attention.cu) and one
 * they would not. The same bounds as above: the cap adds a tanh per score in f32. */
TEST(cuda_op_attention_softcap) {
    CUDA_OR_SKIP(cu);
    static const char *variants[] = {"mma", "simple"};
    static const float caps[] = {0.5f, 50.0f};
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 2; c++) {
            attention_cap_case(cu, variants[i], 2, 256, 8, 2, 64, 0, 0, caps[c]);
            attention_cap_case(cu, variants[i], 2, 200, 4, 4, 128, 8, 37, caps[c]);
            attention_cap_case(cu, variants[i], 2, 77, 4, 2, 16, 5, 9, caps[c]);
        }
}

TEST(cuda_op_attention_simple) {
    CUDA_OR_SKIP(cu);
    attention_case(cu, "simple", 256, 8, 2, 64, 0);
    attention_case(cu, "simple", 77, 4, 2, 96, 5);  /* a head size only the simple kernels take */
    attention_case(cu, "simple", 50, 4, 2, 16, 0);  /* heads below a warp's width: the HF fixtures' sizes */
    attention_case(cu, "simple", 40, 6, 2, 8, 1);
}

TEST(cuda_op_swiglu_dropout_add) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    int FFs[2] = {1024, 1001}; /* the 8-wide path, and rows that break it */
    for (int fi = 0; fi < 2; fi++) {
        int FF = FFs[fi];
        size_t N = 97, n = N * FF;
        float *gu_h = rand_bf16(2 * n, 80, -6, 6), *d_h = rand_bf16(n, 82, -1, 1);
        pair gu = pair_act(cu, gu_h, 2 * n), d = pair_act(cu, d_h, n), o = pair_act(cu, NULL, n);
        pair dgu = pair_act(cu, NULL, 2 * n);
        cpu->swiglu_forward(o.cpu, gu.cpu, N, FF);
        cu->swiglu_forward(o.dev, gu.dev, N, FF);
        float *got = down_act(cu, &o);
        CHECK_REL(got, o.cpu, n, 1e-2);
        free(got);
        cpu->swiglu_backward(dgu.cpu, d.cpu, gu.cpu, N, FF);
        cu->swiglu_backward(dgu.dev, d.dev, gu.dev, N, FF);
        got = down_act(cu, &dgu);
        CHECK_REL(got, dgu.cpu, 2 * n, 1e-2);
        free(got);
        /* dropout of the gate half of the gate/up rows (a strided view): the same elements are zeroed
         * (same counter-based hash, index r·cols + c), kept ones scaled alike */
        uint64_t key = fl_rng_stream(7, 1, 2, 3), *key_d = cu->alloc(sizeof key);
        cu->upload(key_d, &key, sizeof key);
        cpu->dropout(o.cpu, gu.cpu, 0.1f, &key, N, FF, 2 * FF);
        cu->dropout(o.dev, gu.dev, 0.1f, key_d, N, FF, 2 * FF);
        cu->free(key_d);
        got = down_act(cu, &o);
        size_t mismatched = 0, dropped = 0;
        for (size_t r = 0; r < N; r++)
            for (int c = 0; c < FF; c++) {
                size_t i = r * FF + c;
                mismatched += (got[i] == 0.0f) != (o.cpu[i] == 0.0f) && gu.cpu[r * 2 * FF + c] != 0.0f;
                dropped += o.cpu[i] == 0.0f;
            }
        CHECK_EQ_INT(mismatched, 0);
        CHECK(dropped > n / 20 && dropped < n / 5);
        CHECK_REL(got, o.cpu, n, 1e-2);
        free(got);
        /* the LoRA input gradient added into a strided [dx | dxa] buffer: the up half here */
        cpu->add_inplace((float *)gu.cpu + FF, d.cpu, N, FF, 2 * FF);
        cu->add_inplace((char *)gu.dev + 2 * FF, d.dev, N, FF, 2 * FF);
        got = down_act(cu, &gu);
        CHECK_REL(got, gu.cpu, 2 * n, 1e-2);
        free(got); free(gu_h); free(d_h);
        pair_free(cu, &gu); pair_free(cu, &d); pair_free(cu, &o); pair_free(cu, &dgu);
    }
}

TEST(cuda_op_lm_head_loss) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    size_t N = 1000;
    int C = 256, V = 50000; /* 1000 rows x 50000 x 2 B = 100 MB: one chunk; ignored targets included */
    float *x_h = rand_bf16(N * C, 90, -1, 1), *w_h = rand_bf16((size_t)V * C, 91, -0.2f, 0.2f);
    int32_t *tg = malloc(sizeof(int32_t) * N);
    for (size_t i = 0; i < N; i++) tg[i] = i % 7 == 3 ? -100 : (int32_t)(fl_hash64(i + 5) % V);
    pair x = pair_act(cu, x_h, N * C), w = pair_act(cu, w_h, (size_t)V * C), dx = pair_act(cu, NULL, N * C);
    pair logits = pair_f32(cu, NULL, N * V), tl = pair_f32(cu, NULL, N);
    int32_t *tg_d = dev_i32(cu, tg, N);
    /* the loss is added to what the scalars hold: start both at 5 tokens of loss 2 */
    fl_step_scalars sc_cpu = {.grad_scale = 1.0f / 857, .loss_sum = 10.0, .n_counted = 5};
    fl_step_scalars *sc_d = dev_scalars(cu, &sc_cpu);
    cpu->lm_head_loss(dx.cpu, logits.cpu, tl.cpu, &sc_cpu, x.cpu, tg, w.cpu, N, C, V);
    cu->lm_head_loss(dx.dev, logits.dev, tl.dev, sc_d, x.dev, tg_d, w.dev, N, C, V);
    fl_step_scalars sc_cuda = host_scalars(cu, sc_d);
    float *tl_g = down_f32(cu, &tl); /* each token's loss: from bf16 logits, ~1e-2 absolute on ~11 */
    for (size_t i = 0; i < N; i++)
        CHECK_MSG(tg[i] < 0 ? tl_g[i] == 0.0f && tl.cpu[i] == 0.0f : fabsf(tl_g[i] - tl.cpu[i]) <= 0.05f + 5e-3f * tl.cpu[i],
                  "token %zu: loss %g, CPU %g", i, tl_g[i], tl.cpu[i]);
    free(tl_g);
    pair_free(cu, &tl);
    CHECK(sc_cpu.n_counted == 5 + 857 && sc_cuda.n_counted == sc_cpu.n_counted);
    CHECK_CLOSE(sc_cuda.loss_sum, sc_cpu.loss_sum, 0.0, 2e-3);   /* sum of bf16-logit losses: rounding averages out */
    float *g = down_f32(cu, &logits);
    CHECK_REL(g, logits.cpu, N * V, 1e-5);   /* f32-output GEMM of the same bf16 operands */
    free(g);
    g = down_act(cu, &dx);
    CHECK_REL(g, dx.cpu, N * C, 2e-2);       /* through bf16 dlogits */
    free(g);
    /* forward only (no dinp), and the chunked path over several chunks: V=152064 with a 64 MiB budget
     * -> 4 equal chunks of 250 rows (cuda_plan.c) */
    free(w_h);
    pair_free(cu, &w);
    pair_free(cu, &logits);
    V = 152064;
    w_h = rand_bf16((size_t)V * C, 92, -0.2f, 0.2f);
    w = pair_act(cu, w_h, (size_t)V * C);
    for (size_t i = 0; i < N; i++) tg[i] = (int32_t)(fl_hash64(i + 9) % V);
    cu->upload(tg_d, tg, sizeof(int32_t) * N);
    sc_cpu = (fl_step_scalars){0};
    cu->upload(sc_d, &sc_cpu, sizeof sc_cpu);
    fl_cuda_set_lm_head_budget((size_t)64 << 20);
    cpu->lm_head_loss(NULL, NULL, NULL, &sc_cpu, x.cpu, tg, w.cpu, N, C, V);
    cu->lm_head_loss(NULL, NULL, NULL, sc_d, x.dev, tg_d, w.dev, N, C, V);
    fl_cuda_set_lm_head_budget(0);
    sc_cuda = host_scalars(cu, sc_d);
    CHECK(sc_cuda.n_counted == N);
    CHECK_CLOSE(sc_cuda.loss_sum, sc_cpu.loss_sum, 0.0, 2e-3);
    free(x_h); free(w_h); free(tg); cu->free(tg_d); cu->free(sc_d);
    pair_free(cu, &x); pair_free(cu, &w); pair_free(cu, &dx);
}

/* Row r of x times w[r] (the LM head's input gradient weighted per token): the same bf16 inputs,
 * the f32 product rounded to bf16 once (≤ 2^-9 relative per element, so ≤ 2^-9 in relative L2) against
 * the CPU's f32 product; cols not a multiple of 8 take the scalar path. */
TEST(cuda_op_scale_rows) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    const int widths[2] = {256, 37};
    for (int k = 0; k < 2; k++) {
        size_t rows = 301;
        int cols = widths[k];
        float *x_h = rand_bf16(rows * cols, 93 + k, -1, 1), *w_h = rand_bf16(rows, 95 + k, -3, 3);
        pair x = pair_act(cu, x_h, rows * cols), w = pair_f32(cu, w_h, rows);
        cpu->scale_rows(x.cpu, w.cpu, rows, cols);
        cu->scale_rows(x.dev, w.dev, rows, cols);
        float *g = down_act(cu, &x);
        CHECK_REL(g, x.cpu, rows * cols, 1.0 / 512);
        free(g);
        free(x_h); free(w_h);
        pair_free(cu, &x); pair_free(cu, &w);
    }
}

/* AdamW reads its step's factors and the clip factor from the scalars; Σx² and the clip factor are
 * computed on the device with the CPU's arithmetic (the clip factor equal bit for bit, from the
 * same Σx²); a clip factor that is not finite leaves everything unchanged. */
TEST(cuda_op_adamw_clip_and_sum_squares) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    size_t n = 1234567;
    float *p_h = rand_bf16(n, 100, -1, 1), *g_h = rand_bf16(n, 101, -1, 1);
    pair p = pair_f32(cu, p_h, n), m = pair_f32(cu, NULL, n), v = pair_f32(cu, NULL, n), gr = pair_f32(cu, g_h, n);
    void *pw = cu->alloc(2 * n);
    fl_step_scalars sc = {0};
    fl_step_scalars *sc_d = dev_scalars(cu, &sc);
    cpu->sum_squares(&sc.grad_sumsq, gr.cpu, n);
    cu->sum_squares(&sc_d->grad_sumsq, gr.dev, n);
    fl_step_scalars got = host_scalars(cu, sc_d);
    CHECK_CLOSE(got.grad_sumsq, sc.grad_sumsq, 0.0, 1e-9);
    cu->sum_squares(&sc_d->grad_sumsq, gr.dev, n);
    CHECK(host_scalars(cu, sc_d).grad_sumsq == got.grad_sumsq); /* deterministic */
    sc.grad_sumsq = got.grad_sumsq; /* the same Σx² on both sides: the clip factor must match exactly */
    cu->upload(sc_d, &sc, sizeof sc);
    cpu->grad_clip_scale(&sc, 200.0f);
    cu->grad_clip_scale(sc_d, 200.0f);
    got = host_scalars(cu, sc_d);
    CHECK(sc.clip_scale > 0.0f && sc.clip_scale < 1.0f && got.clip_scale == sc.clip_scale);
    for (int step = 1; step <= 3; step++) {
        sc.lr = 1e-3f;
        sc.adam_step_size = (float)(1e-3 / (1.0 - pow(0.9, step)));
        sc.adam_bias2_sqrt = (float)sqrt(1.0 - pow(0.999, step));
        cu->upload(sc_d, &sc, sizeof sc);
        cpu->adamw_update(p.cpu, NULL, m.cpu, v.cpu, gr.cpu, &sc, 0.9f, 0.999f, 1e-8f, 0.01f, n);
        cu->adamw_update(p.dev, pw, m.dev, v.dev, gr.dev, sc_d, 0.9f, 0.999f, 1e-8f, 0.01f, n);
    }
    float *p_g = down_f32(cu, &p);
    CHECK_REL(p_g, p.cpu, n, 1e-6); /* f32 both sides; FMA contraction only */
    float *w_g = malloc(sizeof(float) * n);
    cu->download_act(w_g, pw, n);
    CHECK_REL(w_g, p.cpu, n, 4e-3); /* the bf16 compute copy */
    /* a NaN in the loss sum: the clip factor is NaN and AdamW changes nothing */
    sc.loss_sum = NAN;
    cu->upload(sc_d, &sc, sizeof sc);
    cu->grad_clip_scale(sc_d, 200.0f);
    CHECK(isnan(host_scalars(cu, sc_d).clip_scale));
    cu->adamw_update(p.dev, pw, m.dev, v.dev, gr.dev, sc_d, 0.9f, 0.999f, 1e-8f, 0.01f, n);
    float *p_after = down_f32(cu, &p);
    CHECK(memcmp(p_after, p_g, sizeof(float) * n) == 0);
    free(p_g); free(p_after); free(w_g); free(p_h); free(g_h); cu->free(pw); cu->free(sc_d);
    pair_free(cu, &p); pair_free(cu, &m); pair_free(cu, &v); pair_free(cu, &gr);
}

#endif /* FL_HAVE_CUDA */
