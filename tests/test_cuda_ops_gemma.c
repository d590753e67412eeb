/* test_cuda_ops_gemma.c — the CUDA ops Gemma adds, against the CPU reference on random inputs: the
 * RMSNorm with a weight offset (x·(1 + w)), GeGLU-tanh, the in-place strided scale, and the LM head
 * loss with a logit soft-cap. Not the other ops (test_cuda_ops.c) and not whole models
 * (test_cuda_model.c).
 *
 * Compiled only in builds with CUDA; every test SKIPs without a GPU. Inputs are bf16 on both sides
 * (cuda_test_util.h); tolerances as in test_cuda_ops.c, relative L2: 1e-2 for one op's bf16 output,
 * 2e-2 through a bf16 intermediate (the LM head's logits), 1e-5 for f32 outputs from the same bf16
 * operands, 2^-9 for one bf16 rounding of an exact f32 product. */
#ifdef FL_HAVE_CUDA
#include "cuda_test_util.h"

/* Gemma's norm: weights around 0, offset 1 (the sum in f32 on both sides); C = 1152 (gemma-3-1b,
 * the 8-wide path) and 100 (element by element), a strided output like the fused groups' [x | x·Aᵀ] */
TEST(cuda_op_rmsnorm_offset) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    size_t N = 200;
    int Cs[2] = {1152, 100}, lds[2] = {1152 + 24, 100};
    for (int ci = 0; ci < 2; ci++) {
        int C = Cs[ci], ld = lds[ci];
        float *x_h = rand_bf16(N * C, 201, -2, 2), *w_h = rand_bf16(C, 202, -0.5f, 0.5f);
        float *dy_h = rand_bf16(N * ld, 203, -1, 1), *acc_h = rand_bf16(N * C, 204, -1, 1);
        float *y0_h = rand_bf16(N * ld, 205, -1, 1);
        pair x = pair_act(cu, x_h, N * C), w = pair_act(cu, w_h, C), y = pair_act(cu, y0_h, N * ld);
        pair rstd = pair_f32(cu, NULL, N), dy = pair_act(cu, dy_h, N * ld), dx = pair_act(cu, acc_h, N * C);
        cpu->rmsnorm_offset_forward(y.cpu, rstd.cpu, x.cpu, w.cpu, 1.0f, 1e-6f, N, C, ld);
        cu->rmsnorm_offset_forward(y.dev, rstd.dev, x.dev, w.dev, 1.0f, 1e-6f, N, C, ld);
        float *y_g = down_act(cu, &y), *r_g = down_f32(cu, &rstd);
        CHECK_REL(y_g, y.cpu, N * ld, 1e-2);   /* bf16 output; the padding columns equal on both sides */
        CHECK_REL(r_g, rstd.cpu, N, 1e-5);
        cpu->rmsnorm_offset_backward(dx.cpu, dy.cpu, x.cpu, w.cpu, 1.0f, rstd.cpu, N, C, ld);   /* += */
        cu->rmsnorm_offset_backward(dx.dev, dy.dev, x.dev, w.dev, 1.0f, rstd.dev, N, C, ld);
        float *dx_g = down_act(cu, &dx);
        CHECK_REL(dx_g, dx.cpu, N * C, 1e-2);
        free(y_g); free(r_g); free(dx_g); free(x_h); free(w_h); free(dy_h); free(acc_h); free(y0_h);
        pair_free(cu, &x); pair_free(cu, &w); pair_free(cu, &y); pair_free(cu, &rstd); pair_free(cu, &dy);
        pair_free(cu, &dx);
    }
}

TEST(cuda_op_geglu) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    int FFs[2] = {6912, 1001}; /* gemma-3-1b's FF (8-wide), and rows that break it */
    for (int fi = 0; fi < 2; fi++) {
        int FF = FFs[fi];
        size_t N = 53, n = N * FF;
        float *gu_h = rand_bf16(2 * n, 210, -6, 6), *d_h = rand_bf16(n, 211, -1, 1);
        pair gu = pair_act(cu, gu_h, 2 * n), d = pair_act(cu, d_h, n), o = pair_act(cu, NULL, n);
        pair dgu = pair_act(cu, NULL, 2 * n);
        cpu->geglu_forward(o.cpu, gu.cpu, N, FF);
        cu->geglu_forward(o.dev, gu.dev, N, FF);
        float *got = down_act(cu, &o);
        CHECK_REL(got, o.cpu, n, 1e-2);
        free(got);
        cpu->geglu_backward(dgu.cpu, d.cpu, gu.cpu, N, FF);
        cu->geglu_backward(dgu.dev, d.dev, gu.dev, N, FF);
        got = down_act(cu, &dgu);
        CHECK_REL(got, dgu.cpu, 2 * n, 1e-2);
        free(got); free(gu_h); free(d_h);
        pair_free(cu, &gu); pair_free(cu, &d); pair_free(cu, &o); pair_free(cu, &dgu);
    }
}

/* The q columns of q/k/v rows (strided, the query scale) and a contiguous matrix (the embedding
 * scale): one bf16 rounding of the f32 product; the other columns untouched (whole buffers compared). */
TEST(cuda_op_scale_2d) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    const int cols[2] = {1024, 37}, lds[2] = {1024 + 2 * 256, 37};
    for (int k = 0; k < 2; k++) {
        size_t rows = 301;
        float *x_h = rand_bf16(rows * lds[k], 220 + k, -1, 1);
        pair x = pair_act(cu, x_h, rows * lds[k]);
        cpu->scale_2d(x.cpu, 33.941125f, rows, cols[k], lds[k]);
        cu->scale_2d(x.dev, 33.941125f, rows, cols[k], lds[k]);
        float *g = down_act(cu, &x);
        CHECK_REL(g, x.cpu, rows * lds[k], 1.0 / 512);
        free(g); free(x_h);
        pair_free(cu, &x);
    }
}

/* Soft-capped logits (cap 2 on logits of |z| up to ~5: tanh's curve binds): the f32 logits out, each
 * token's loss, the scalars and the input gradient against the CPU's. */
TEST(cuda_op_lm_head_loss_softcap) {
    CUDA_OR_SKIP(cu);
    const fl_backend *cpu = fl_backend_cpu();
    size_t N = 300;
    int C = 256, V = 4096;
    float *x_h = rand_bf16(N * C, 230, -1, 1), *w_h = rand_bf16((size_t)V * C, 231, -0.6f, 0.6f);
    int32_t *tg = malloc(sizeof(int32_t) * N);
    for (size_t i = 0; i < N; i++) tg[i] = i % 7 == 3 ? -100 : (int32_t)(fl_hash64(i + 5) % V);
    pair x = pair_act(cu, x_h, N * C), w = pair_act(cu, w_h, (size_t)V * C), dx = pair_act(cu, NULL, N * C);
    pair logits = pair_f32(cu, NULL, N * V), tl = pair_f32(cu, NULL, N);
    int32_t *tg_d = dev_i32(cu, tg, N);
    fl_step_scalars sc_cpu = {.grad_scale = 1.0f / 257};
    fl_step_scalars *sc_d = dev_scalars(cu, &sc_cpu);
    cpu->lm_head_loss_softcap(dx.cpu, logits.cpu, tl.cpu, &sc_cpu, x.cpu, tg, w.cpu, 2.0f, N, C, V);
    cu->lm_head_loss_softcap(dx.dev, logits.dev, tl.dev, sc_d, x.dev, tg_d, w.dev, 2.0f, N, C, V);
    fl_step_scalars sc_cuda = host_scalars(cu, sc_d);
    CHECK(sc_cuda.n_counted == sc_cpu.n_counted);
    CHECK_CLOSE(sc_cuda.loss_sum, sc_cpu.loss_sum, 0.0, 2e-3);
    float *g = down_f32(cu, &logits);
    CHECK_REL(g, logits.cpu, N * V, 1e-5);   /* f32 GEMM of the same bf16 operands, then the same tanh */
    free(g);
    g = down_f32(cu, &tl);
    CHECK_REL(g, tl.cpu, N, 2e-2);           /* from bf16 logits */
    free(g);
    g = down_act(cu, &dx);
    CHECK_REL(g, dx.cpu, N * C, 2e-2);       /* through bf16 dlogits */
    free(g);
    free(x_h); free(w_h); free(tg); cu->free(tg_d); cu->free(sc_d);
    pair_free(cu, &x); pair_free(cu, &w); pair_free(cu, &dx); pair_free(cu, &logits); pair_free(cu, &tl);
}
#endif
