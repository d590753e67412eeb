/* test_gradcheck.c — finite-difference checks of every backward op and of the whole model's LoRA
 * gradients, on the CPU reference backend.
 *
 * Each op check builds a scalar L = Σ w ⊙ op(x) with random w, so dL/dout = w, runs the op's
 * backward, and compares with central differences (L(x+h) − L(x−h)) / 2h in f32 arithmetic. With
 * h = 1e-2 and O(1) values, truncation error is O(h²)·|f'''| ~ 1e-4 and f32 rounding of L adds
 * ~1e-7·|L|/h ~ 1e-4, so agreement is checked to 1e-2 of the gradient's largest entry — far below
 * what any sign, factor or index error produces (≥ 10%). The whole-model checks use h = 1e-3. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "common/rng.h"
#include "engine/model.h"
#include "test.h"


static void fill(float *x, size_t n, uint64_t seed, float lo, float hi) {
    fl_rng_fill_uniform(x, n, fl_rng_stream(seed, 7, 7, 7), lo, hi);
}

static double weighted_sum(const float *w, const float *y, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * y[i];
    return s;
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* Compares analytic gradient `grad` of x (n) with central differences of `loss`, where
 * loss(ctx) recomputes L from the current x. Checks every index (sizes here are small). */
typedef double (*loss_fn)(void *ctx);
static void fd_compare_strided(const char *what, float *x, const float *grad, size_t n, size_t stride, float h,
                               loss_fn loss, void *ctx) {
    double tol = 1e-2 * max_abs(grad, n) + 1e-5, worst = 0;
    size_t worst_i = 0;
    double worst_fd = 0;
    for (size_t i = 0; i < n; i += stride) {
        float saved = x[i];
        x[i] = saved + h;
        double plus = loss(ctx);
        x[i] = saved - h;
        double minus = loss(ctx);
        x[i] = saved;
        double fd = (plus - minus) / (2.0 * h);
        if (fabs(fd - grad[i]) > worst) { worst = fabs(fd - grad[i]); worst_i = i; worst_fd = fd; }
    }
    CHECK_MSG(worst <= tol, "%s[%zu]: analytic %.6g vs finite difference %.6g (tol %.3g)", what, worst_i,
              grad[worst_i], worst_fd, tol);
    CHECK_MSG(max_abs(grad, n) > 1e-4, "%s: gradient is all ~zero, the check would be vacuous", what);
}

static void fd_compare(const char *what, float *x, const float *grad, size_t n, loss_fn loss, void *ctx) {
    fd_compare_strided(what, x, grad, n, 1, 1e-2f, loss, ctx);
}

/* The ops take row strides (ld) wider than their rows where backend.h allows it: the padding
 * columns must be neither read as data nor written (they hold NaN or a sentinel here). */

/* ---- RMSNorm (output / output gradient with row stride ld) ---- */
typedef struct { float *x, *w, *y, *dy, *rstd; int N, C, ld; } norm_ctx;
static double norm_loss(void *p) {
    norm_ctx *c = p;
    rmsnorm_forward_cpu(c->y, c->rstd, c->x, c->w, 1e-5f, (size_t)c->N, c->C, c->ld);
    double s = 0;
    for (int n = 0; n < c->N; n++) s += weighted_sum(c->dy + n * c->ld, c->y + n * c->ld, (size_t)c->C);
    return s;
}
TEST(gradcheck_rmsnorm) {
    int N = 3, C = 16, ld = C + 3;
    norm_ctx c = {malloc(4 * N * C), malloc(4 * C), malloc(4 * N * ld), malloc(4 * N * ld), malloc(4 * N), N, C, ld};
    fill(c.x, N * C, 1, -1, 1); fill(c.w, C, 2, 0.5f, 1.5f); fill(c.dy, N * ld, 3, -1, 1);
    for (int i = 0; i < N * ld; i++) c.y[i] = -7.0f;
    for (int n = 0; n < N; n++) c.dy[n * ld + C] = NAN; /* a padding column: must not be read */
    float *dx = calloc(N * C, 4);
    norm_loss(&c);
    for (int n = 0; n < N; n++) CHECK(c.y[n * ld + C + 1] == -7.0f); /* padding not written */
    rmsnorm_backward_cpu(dx, c.dy, c.x, c.w, c.rstd, N, C, ld);
    fd_compare("rmsnorm dx", c.x, dx, N * C, norm_loss, &c);
    free(c.x); free(c.w); free(c.y); free(c.dy); free(c.rstd); free(dx);
}

/* ---- RoPE (the first H heads of rows of stride ld: q and k of a q/k/v row; the first RD dims of
 * each head rotate, scaled by `scale`) ---- */
typedef struct { float *x, *y, *dy, *inv_freq; int32_t *pos; int N, H, HS, RD, ld; float scale; } rope_ctx;
static double rope_loss(void *p) {
    rope_ctx *c = p;
    memcpy(c->y, c->x, sizeof(float) * c->N * c->ld);
    rope_forward_cpu(c->y, c->pos, c->inv_freq, c->scale, c->N, c->H, c->HS, c->RD, c->ld);
    return weighted_sum(c->dy, c->y, (size_t)c->N * c->ld);
}
static void rope_check(int HS, int RD, float scale) {
    int N = 4, H = 2, ld = H * HS + 8, n = N * ld; /* 8 columns after the heads: left alone */
    int32_t pos[4] = {0, 3, 7, 100};
    float inv_freq[4] = {1.0f, 0.3f, 0.05f, 0.001f};
    rope_ctx c = {malloc(4 * n), malloc(4 * n), malloc(4 * n), inv_freq, pos, N, H, HS, RD, ld, scale};
    fill(c.x, n, 4, -1, 1); fill(c.dy, n, 5, -1, 1);
    float *dx = malloc(4 * n);
    memcpy(dx, c.dy, 4 * n); /* the untouched columns' gradient is dy itself */
    rope_backward_cpu(dx, pos, inv_freq, scale, N, H, HS, RD, ld);
    fd_compare("rope dx", c.x, dx, n, rope_loss, &c);
    rope_loss(&c);
    for (int r = 0; r < N; r++) {
        for (int j = H * HS; j < ld; j++) CHECK(c.y[r * ld + j] == c.x[r * ld + j]);
        for (int h = 0; h < H; h++)   /* partial rotary: dims RD..HS-1 of every head pass through */
            for (int j = RD; j < HS; j++) CHECK(c.y[r * ld + h * HS + j] == c.x[r * ld + h * HS + j]);
    }
    free(c.x); free(c.y); free(c.dy); free(dx);
}
TEST(gradcheck_rope) { rope_check(8, 8, 1.0f); }
/* Phi-3: partial rotary (RD 6 of HS 10: pairs j, j + 3, the last 4 dims untouched; an odd RD/2)
 * and longrope's attention factor on cos and sin */
TEST(gradcheck_rope_partial_rotary_scaled) { rope_check(10, 6, 1.19f); }

/* ---- attention (GQA, with a document boundary, q/k/v in one buffer with a padded row) ---- */
typedef struct { float *qkv, *out, *lse, *dout; int32_t *seg; int B, T, NH, NKV, HS, ld; float cap; } attn_ctx;
static double attn_loss(void *p) {
    attn_ctx *c = p;
    float *q = c->qkv, *k = q + c->NH * c->HS, *v = k + c->NKV * c->HS;
    attention_forward_cpu(c->out, c->lse, q, k, v, c->seg, c->B, c->T, c->NH, c->NKV, c->HS, c->ld, c->cap);
    return weighted_sum(c->dout, c->out, (size_t)c->B * c->T * c->NH * c->HS);
}
TEST(gradcheck_attention_gqa_packed) {
    int B = 2, T = 5, NH = 4, NKV = 2, HS = 4, ld = (NH + 2 * NKV) * HS + 3;
    size_t nq = (size_t)B * T * NH * HS, nqkv = (size_t)B * T * ld;
    /* row 0: one document; row 1: documents [0,2) and [2,5) */
    int32_t seg[10] = {0, 0, 0, 0, 0, 0, 0, 2, 2, 2};
    attn_ctx c = {malloc(4 * nqkv), malloc(4 * nq), malloc(4 * B * NH * T), malloc(4 * nq), seg, B, T, NH, NKV, HS, ld, 0.0f};
    fill(c.qkv, nqkv, 6, -1, 1); fill(c.dout, nq, 9, -1, 1);
    for (int n = 0; n < B * T; n++) c.qkv[n * ld + ld - 1] = NAN; /* padding: never read */
    float *dqkv = malloc(4 * nqkv);
    for (size_t i = 0; i < nqkv; i++) dqkv[i] = 0.0f;
    attn_loss(&c);
    attention_backward_cpu(dqkv, dqkv + NH * HS, dqkv + (NH + NKV) * HS, c.dout, c.out, c.lse, c.qkv, c.qkv + NH * HS,
                           c.qkv + (NH + NKV) * HS, seg, B, T, NH, NKV, HS, ld, 0.0f);
    for (int n = 0; n < B * T; n++) { /* padding not written; give it the value FD sees */
        CHECK(dqkv[n * ld + ld - 1] == 0.0f);
        c.qkv[n * ld + ld - 1] = 0.0f;
    }
    fd_compare("attention dq|dk|dv", c.qkv, dqkv, nqkv, attn_loss, &c);
    free(c.qkv); free(c.out); free(c.lse); free(c.dout); free(dqkv);
}

/* Sliding windows W = 1, 2, 3 (engine/model.h's fl_window_key_start as seg_start) over the same
 * packed rows: the window and the document boundary both bound what a query sees. */
TEST(gradcheck_attention_sliding_window) {
    int B = 2, T = 7, NH = 4, NKV = 2, HS = 4, ld = (NH + 2 * NKV) * HS + 1;
    size_t nq = (size_t)B * T * NH * HS, nqkv = (size_t)B * T * ld;
    int32_t seg[14] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2}, win[14];
    for (int W = 1; W <= 3; W++) {
        fl_window_key_start(win, seg, (size_t)B, T, W);
        attn_ctx c = {malloc(4 * nqkv), malloc(4 * nq), malloc(4 * B * NH * T), malloc(4 * nq), win, B, T, NH, NKV, HS, ld, 0.0f};
        fill(c.qkv, nqkv, 60 + W, -1, 1); fill(c.dout, nq, 90 + W, -1, 1);
        for (int n = 0; n < B * T; n++) c.qkv[n * ld + ld - 1] = 0.0f;
        float *dqkv = malloc(4 * nqkv);
        for (size_t i = 0; i < nqkv; i++) dqkv[i] = 0.0f;
        attn_loss(&c);
        attention_backward_cpu(dqkv, dqkv + NH * HS, dqkv + (NH + NKV) * HS, c.dout, c.out, c.lse, c.qkv,
                               c.qkv + NH * HS, c.qkv + (NH + NKV) * HS, win, B, T, NH, NKV, HS, ld, 0.0f);
        fd_compare("windowed attention dq|dk|dv", c.qkv, dqkv, nqkv, attn_loss, &c);
        free(c.qkv); free(c.out); free(c.lse); free(c.dout); free(dqkv);
    }
}

/* Gemma 2's attention soft-cap s' = c·tanh(s/c): caps that bind (0.2, 0.5), that bend (2) and
 * Gemma 2's 50, plain causal and windowed (W 2) over the packed rows; q and k scaled by 3 so that
 * the scores (|s| up to ~|q||k|/2 = 18) reach the saturated part of the tanh. */
TEST(gradcheck_attention_softcap) {
    int B = 2, T = 6, NH = 4, NKV = 2, HS = 4, ld = (NH + 2 * NKV) * HS + 1;
    size_t nq = (size_t)B * T * NH * HS, nqkv = (size_t)B * T * ld;
    int32_t seg[12] = {0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2}, win[12];
    static const float caps[] = {0.2f, 0.5f, 2.0f, 50.0f};
    for (int W = 0; W <= 2; W += 2)
        for (int ci = 0; ci < 4; ci++) {
            fl_window_key_start(win, seg, (size_t)B, T, W);
            attn_ctx c = {malloc(4 * nqkv), malloc(4 * nq), malloc(4 * B * NH * T), malloc(4 * nq), win, B, T, NH, NKV,
                          HS, ld, caps[ci]};
            fill(c.qkv, nqkv, 70 + W + ci, -1, 1); fill(c.dout, nq, 95 + W + ci, -1, 1);
            for (int n = 0; n < B * T; n++) {
                for (int e = 0; e < (NH + NKV) * HS; e++) c.qkv[n * ld + e] *= 3.0f; /* q, k */
                c.qkv[n * ld + ld - 1] = 0.0f;
            }
            float *dqkv = malloc(4 * nqkv);
            for (size_t i = 0; i < nqkv; i++) dqkv[i] = 0.0f;
            attn_loss(&c);
            attention_backward_cpu(dqkv, dqkv + NH * HS, dqkv + (NH + NKV) * HS, c.dout, c.out, c.lse, c.qkv,
                                   c.qkv + NH * HS, c.qkv + (NH + NKV) * HS, win, B, T, NH, NKV, HS, ld, c.cap);
            fd_compare("soft-capped attention dq|dk|dv", c.qkv, dqkv, nqkv, attn_loss, &c);
            free(c.qkv); free(c.out); free(c.lse); free(c.dout); free(dqkv);
        }
}

/* ---- SwiGLU (the fused gate/up rows) ---- */
typedef struct { float *gu, *y, *dy; int N, FF; } swiglu_ctx;
static double swiglu_loss(void *p) {
    swiglu_ctx *c = p;
    swiglu_forward_cpu(c->y, c->gu, c->N, c->FF);
    return weighted_sum(c->dy, c->y, (size_t)c->N * c->FF);
}
TEST(gradcheck_swiglu) {
    int N = 4, FF = 10, n = N * FF;
    swiglu_ctx c = {malloc(8 * n), malloc(4 * n), malloc(4 * n), N, FF};
    for (int r = 0; r < N; r++) {
        fill(c.gu + r * 2 * FF, FF, 10 + r, -4, 4);       /* gate */
        fill(c.gu + r * 2 * FF + FF, FF, 20 + r, -2, 2);  /* up */
    }
    fill(c.dy, n, 12, -1, 1);
    float *dgu = malloc(8 * n);
    swiglu_backward_cpu(dgu, c.dy, c.gu, N, FF);
    fd_compare("swiglu dgate|dup", c.gu, dgu, 2 * n, swiglu_loss, &c);
    free(c.gu); free(c.y); free(c.dy); free(dgu);
}

/* ---- matmul (input and weight gradients, bias; every operand with a wider row stride) ---- */
typedef struct { float *x, *w, *b, *y, *dy; int N, IC, OC, ldx, ldw, ldy; } mm_ctx;
static double mm_loss(void *p) {
    mm_ctx *c = p;
    matmul_forward_cpu(c->y, c->x, c->w, c->b, 1.5f, 0.0f, c->N, c->IC, c->OC, c->ldy, c->ldx, c->ldw);
    return weighted_sum(c->dy, c->y, (size_t)c->N * c->ldy);
}
TEST(gradcheck_matmul) {
    int N = 5, IC = 7, OC = 3, ldx = IC + 2, ldw = IC + 1, ldy = OC + 3;
    mm_ctx c = {malloc(4 * N * ldx), malloc(4 * OC * ldw), malloc(4 * OC), malloc(4 * N * ldy), calloc(N * ldy, 4),
                N, IC, OC, ldx, ldw, ldy};
    fill(c.x, N * ldx, 13, -1, 1); fill(c.w, OC * ldw, 14, -1, 1); fill(c.b, OC, 15, -1, 1);
    for (int n = 0; n < N; n++) {
        fill(c.dy + n * ldy, OC, 16 + n, -1, 1);   /* padding of dy stays 0: those y are not outputs */
        c.x[n * ldx + IC] = NAN;                   /* padding of x: never read */
    }
    for (int o = 0; o < OC; o++) c.w[o * ldw + IC] = NAN;
    for (int i = 0; i < N * ldy; i++) c.y[i] = 0.0f;
    float *dx = malloc(4 * N * ldx), *dw = calloc(OC * IC, 4);
    for (int i = 0; i < N * ldx; i++) dx[i] = -9.0f;
    matmul_backward_input_cpu(dx, c.dy, c.w, 1.5f, 0.0f, N, IC, OC, ldx, ldy, ldw);
    matmul_backward_weight_cpu(dw, c.dy, c.x, 1.5f, N, IC, OC, ldy, ldx);
    for (int n = 0; n < N; n++) { /* padding not written; FD needs finite padding values */
        CHECK(dx[n * ldx + IC] == -9.0f && dx[n * ldx + IC + 1] == -9.0f);
        c.x[n * ldx + IC] = 0.0f;
        dx[n * ldx + IC] = dx[n * ldx + IC + 1] = 0.0f;
    }
    for (int o = 0; o < OC; o++) c.w[o * ldw + IC] = 0.0f;
    mm_loss(&c);
    for (int n = 0; n < N; n++) CHECK(c.y[n * ldy + OC] == 0.0f); /* output padding not written */
    fd_compare("matmul dinp", c.x, dx, N * ldx, mm_loss, &c);
    float *dw_full = calloc(OC * ldw, 4);
    for (int o = 0; o < OC; o++) memcpy(dw_full + o * ldw, dw + o * IC, 4 * IC);
    fd_compare("matmul dweight", c.w, dw_full, OC * ldw, mm_loss, &c);
    free(c.x); free(c.w); free(c.b); free(c.y); free(c.dy); free(dx); free(dw); free(dw_full);
}

/* ---- LM head + cross-entropy ---- */
typedef struct { float *x, *w; int32_t *targets; int N, C, V; } ce_ctx;
static double ce_loss(void *p) {
    ce_ctx *c = p;
    fl_step_scalars sc = {0};
    lm_head_loss_cpu(NULL, NULL, NULL, &sc, c->x, c->targets, c->w, c->N, c->C, c->V);
    return sc.loss_sum;
}
TEST(gradcheck_lm_head_cross_entropy) {
    int N = 4, C = 6, V = 11;
    int32_t targets[4] = {3, -100, 10, 0};
    ce_ctx c = {malloc(4 * N * C), malloc(4 * V * C), targets, N, C, V};
    fill(c.x, N * C, 17, -1, 1); fill(c.w, V * C, 18, -1, 1);
    float *dx = malloc(4 * N * C);
    fl_step_scalars sc = {.grad_scale = 1.0f};
    lm_head_loss_cpu(dx, NULL, NULL, &sc, c.x, targets, c.w, N, C, V);
    CHECK_EQ_INT(sc.n_counted, 3);
    fd_compare("lm_head dinp", c.x, dx, N * C, ce_loss, &c);
    for (int i = 0; i < C; i++) CHECK(dx[1 * C + i] == 0.0f); /* ignored token: no gradient */
    free(c.x); free(c.w); free(dx);
}

/* ---- RMSNorm with a weight offset (Gemma's x·(1 + w): weights around 0, offset 1) ---- */
typedef struct { float *x, *w, *y, *dy, *rstd; int N, C; } norm1p_ctx;
static double norm1p_loss(void *p) {
    norm1p_ctx *c = p;
    rmsnorm_offset_forward_cpu(c->y, c->rstd, c->x, c->w, 1.0f, 1e-6f, (size_t)c->N, c->C, c->C);
    return weighted_sum(c->dy, c->y, (size_t)c->N * c->C);
}
TEST(gradcheck_rmsnorm_offset) {
    int N = 3, C = 16;
    norm1p_ctx c = {malloc(4 * N * C), malloc(4 * C), malloc(4 * N * C), malloc(4 * N * C), malloc(4 * N), N, C};
    fill(c.x, N * C, 51, -1, 1); fill(c.w, C, 52, -0.5f, 0.5f); fill(c.dy, N * C, 53, -1, 1);
    float *dx = calloc(N * C, 4), *y0 = malloc(4 * N * C), *w1 = malloc(4 * C);
    norm1p_loss(&c);
    /* the offset form equals the plain op on 1 + w (exact: the same f32 sum) */
    for (int i = 0; i < C; i++) w1[i] = 1.0f + c.w[i];
    rmsnorm_forward_cpu(y0, c.rstd, c.x, w1, 1e-6f, N, C, C);
    CHECK(memcmp(y0, c.y, 4 * N * C) == 0);
    norm1p_loss(&c);
    rmsnorm_offset_backward_cpu(dx, c.dy, c.x, c.w, 1.0f, c.rstd, N, C, C);
    fd_compare("rmsnorm offset dx", c.x, dx, N * C, norm1p_loss, &c);
    free(c.x); free(c.w); free(c.y); free(c.dy); free(c.rstd); free(dx); free(y0); free(w1);
}

/* ---- GeGLU with gelu_tanh (Gemma) ---- */
static double geglu_loss(void *p) {
    swiglu_ctx *c = p;
    geglu_forward_cpu(c->y, c->gu, c->N, c->FF);
    return weighted_sum(c->dy, c->y, (size_t)c->N * c->FF);
}
TEST(gradcheck_geglu_tanh) {
    int N = 4, FF = 10, n = N * FF;
    swiglu_ctx c = {malloc(8 * n), malloc(4 * n), malloc(4 * n), N, FF};
    for (int r = 0; r < N; r++) {
        fill(c.gu + r * 2 * FF, FF, 60 + r, -4, 4);       /* gate: both tails and the curve of gelu */
        fill(c.gu + r * 2 * FF + FF, FF, 70 + r, -2, 2);  /* up */
    }
    fill(c.dy, n, 62, -1, 1);
    geglu_loss(&c);   /* gelu_tanh(g) = g/2·(1 + tanh(√(2/π)(g + 0.044715g³))), in double */
    double worst = 0;
    for (int r = 0; r < N; r++)
        for (int i = 0; i < FF; i++) {
            double g = c.gu[r * 2 * FF + i], u = c.gu[r * 2 * FF + FF + i];
            double ref = 0.5 * g * (1 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * u;
            worst = fmax(worst, fabs(ref - c.y[r * FF + i]));
        }
    CHECK_MSG(worst < 1e-5, "geglu forward vs double: %.3g", worst);   /* |y| <= 8: a few f32 ulps */
    float *dgu = malloc(8 * n);
    geglu_backward_cpu(dgu, c.dy, c.gu, N, FF);
    fd_compare("geglu dgate|dup", c.gu, dgu, 2 * n, geglu_loss, &c);
    free(c.gu); free(c.y); free(c.dy); free(dgu);
}

/* ---- LM head + cross-entropy with Gemma 2's logit soft-cap ---- */
static double ce_softcap_loss(void *p) {
    ce_ctx *c = p;
    fl_step_scalars sc = {0};
    lm_head_loss_softcap_cpu(NULL, NULL, NULL, &sc, c->x, c->targets, c->w, 2.0f, c->N, c->C, c->V);
    return sc.loss_sum;
}
TEST(gradcheck_lm_head_softcap) {
    int N = 4, C = 6, V = 11;
    int32_t targets[4] = {3, -100, 10, 0};
    ce_ctx c = {malloc(4 * N * C), malloc(4 * V * C), targets, N, C, V};
    fill(c.x, N * C, 77, -1, 1); fill(c.w, V * C, 78, -1, 1);   /* |z| up to ~3 > cap 2: the curve binds */
    float *dx = malloc(4 * N * C), *logits = malloc(4 * N * V), *raw = malloc(4 * N * V);
    fl_step_scalars sc = {.grad_scale = 1.0f};
    lm_head_loss_softcap_cpu(dx, logits, NULL, &sc, c.x, targets, c.w, 2.0f, N, C, V);
    lm_head_loss_cpu(NULL, raw, NULL, NULL, c.x, targets, c.w, N, C, V);
    double worst = 0;
    for (int i = 0; i < N * V; i++) worst = fmax(worst, fabs(logits[i] - 2.0 * tanh(raw[i] / 2.0)));
    CHECK_MSG(worst < 1e-6, "soft-capped logits vs 2·tanh(z/2): %.3g", worst);
    fd_compare("lm_head softcap dinp", c.x, dx, N * C, ce_softcap_loss, &c);
    free(c.x); free(c.w); free(dx); free(logits); free(raw);
}

/* ---- the whole model: every LoRA gradient of a tiny Qwen2-style model with GQA, biases, dropout,
 * rsLoRA, packed documents and llama3 RoPE ---- */
static void scale_floats(void *x, size_t n, float s) {
    float *f = x;
    for (size_t i = 0; i < n; i++) f[i] *= s;
}

typedef struct { fl_model *m; fl_batch *batch; uint64_t micro_step; } model_ctx;
static double model_loss(void *p) {
    model_ctx *c = p;
    fl_model_sync_lora(c->m);
    c->m->micro_step = c->micro_step - 1; /* same dropout masks on every evaluation */
    fl_step_stats st = fl_model_forward(c->m, c->batch, 0.0f);
    return st.loss;
}

/* An NF4 weight (backend memory = host memory on the CPU) replaced by the quantization of its
 * dequantized values times s: the same layout, so it is rewritten in place. */
static void scale_nf4(fl_nf4_weight *w, float s) {
    size_t n = (size_t)(w->rows * w->cols);
    float *x = malloc(sizeof(float) * n);
    fl_nf4_dequantize(w, x, FL_F32);
    for (size_t i = 0; i < n; i++) x[i] *= s;
    fl_nf4_weight q;
    CHECK(fl_nf4_quantize(&q, x, FL_F32, w->rows, w->cols, 1, "w") == 0 && q.bytes == w->bytes);
    void *storage = w->storage;
    memcpy(storage, q.storage, q.bytes);
    fl_nf4_view(w, &q, storage);
    fl_nf4_free(&q);
    free(x);
}

/* The Gemma fields of model/config.h on a gradcheck config: (1 + w) norms, sandwich norms, GeGLU,
 * embed scale, query_pre_attn_scalar 5 != head_dim 6, one sliding layer (window 3) with its own RoPE base
 * (Gemma 3) and one
 * global with linear scaling; Gemma 3: q_norm/k_norm; Gemma 2: a logit soft-cap of 4. */
static void gemma_fields(fl_model_config *cfg, int gemma3) {
    cfg->arch = gemma3 ? FL_ARCH_GEMMA3 : FL_ARCH_GEMMA2;
    cfg->qk_norm = gemma3;
    cfg->norm_weight_offset = 1.0f;
    cfg->sandwich_norms = 1;
    cfg->act = FL_ACT_GELU_TANH;
    cfg->embed_scale = sqrt((double)cfg->hidden_size);
    cfg->query_pre_attn_scalar = 5;
    cfg->tie_word_embeddings = 1;
    cfg->sliding_window = 3;        /* layer 0 slides (T = 6: its later queries lose keys), layer 1 is global */
    cfg->window_global_every = 2;
    if (gemma3) {
        cfg->rope_local_theta = 100.0;
        cfg->rope_linear_factor = 2.0;
    } else {
        cfg->final_logit_softcapping = 4.0f;
        cfg->attn_logit_softcapping = 0.5f;   /* binds on these scores: the tanh's curve, not its line */
    }
}

/* qwen: 0 Llama (llama3 RoPE), 1 Qwen2 (q/k/v bias, tied), 2 Qwen3 (q_norm/k_norm, tied, head_dim 6:
 * q dim 24 != hidden 12), 3 Gemma 3 and 4 Gemma 2 (gemma_fields, head_dim 6, its own window), 5 Phi-3
 * (fused modules, partial rotary, longrope), 6 Granite (its four scalars, none 1 or a power of two,
 * tied), 7 OLMo 2 (no pre-norms, post norms, q/k norms over the whole q (24) and k (12) rows,
 * untied); window > 0:
 * a sliding window on the layers model/config.h's rule picks (global_every 2: layer 0 sliding, layer 1
 * global) */
static void model_gradcheck_window(int qwen, float dropout, int recompute, fl_quant quant, int window, int global_every) {
    fl_model_config cfg = {.arch = qwen == 2 ? FL_ARCH_QWEN3 : qwen ? FL_ARCH_QWEN2 : FL_ARCH_LLAMA, .vocab_size = 23,
                           .hidden_size = 12, .intermediate_size = 20, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                           .head_dim = qwen == 5 ? 8 : qwen >= 2 ? 6 : 4, .max_position_embeddings = 64, .rope_theta = 10000.0,
                           .rms_norm_eps = 1e-5f, .tie_word_embeddings = qwen != 0, .qkv_bias = qwen == 1,
                           .qk_norm = qwen == 2, .sliding_window = window, .window_global_every = global_every};
    if (qwen == 3 || qwen == 4) gemma_fields(&cfg, qwen == 3);
    if (qwen == 6) {   /* Granite (Llama layers): every scalar binds on the gradients */
        cfg.arch = FL_ARCH_LLAMA;
        cfg.embedding_multiplier = 1.7; cfg.attention_multiplier = 0.3; cfg.residual_multiplier = 0.6;
        cfg.logits_scaling = 3.0;
    }
    if (qwen == 7) {   /* OLMo 2 (model/config.h) */
        cfg.arch = FL_ARCH_OLMO2; cfg.qkv_bias = 0; cfg.tie_word_embeddings = 0;
        cfg.qk_norm = cfg.qk_norm_full = cfg.sandwich_norms = cfg.no_pre_norms = 1;
    }
    if (!qwen) {
        cfg.rope_llama3 = 1; cfg.rope_factor = 8; cfg.rope_low_freq_factor = 1; cfg.rope_high_freq_factor = 4;
        cfg.rope_original_max_position = 16;
    }
    if (qwen == 5) {   /* Phi-3: fused modules (one LoRA per qkv_proj, gate_up_proj), RD 6 of HS 8, longrope (T 6 > 4) */
        cfg.arch = FL_ARCH_PHI3; cfg.fused_modules = 1; cfg.tie_word_embeddings = 0; cfg.qkv_bias = 0;
        cfg.rotary_dim = 6; cfg.rope_longrope = 1; cfg.rope_original_max_position = 4; cfg.rope_attention_factor = 1.3;
        for (int j = 0; j < 3; j++) { cfg.rope_short_factor[j] = 1.0f + j; cfg.rope_long_factor[j] = 1.5f + 3 * j; }
    }
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 3;
    lc.alpha = 5;
    lc.use_rslora = qwen == 1;
    lc.dropout = dropout;
    fl_model m;
    fl_model_init_random_quant(&m, &cfg, 99, fl_backend_cpu(), &lc, quant);
    m.recompute = recompute;
    /* the random init is std 0.02; scale the matrices up 5x (norm weights stay ~1) so gradients are
     * O(1e-2..1) without saturating softmax, and give B non-zero values */
    fill(m.lora.data, m.lora.n, 21, -0.3f, 0.3f);
    int C = cfg.hidden_size, QD = fl_config_q_dim(&cfg), KVD = fl_config_kv_dim(&cfg), FF = cfg.intermediate_size;
    scale_floats(m.base.embed, (size_t)cfg.vocab_size * C, 5.0f);
    if (!cfg.tie_word_embeddings) scale_floats(m.base.lm_head, (size_t)cfg.vocab_size * C, 5.0f);
    for (int l = 0; l < cfg.n_layers && quant == FL_QUANT_NF4; l++)
        for (int p = 0; p < FL_N_PROJ; p++) scale_nf4(&m.base.nf4[l * FL_N_PROJ + p], 5.0f);
    for (int l = 0; l < cfg.n_layers && quant == FL_QUANT_NONE; l++) {
        fl_layer_weights *lw = &m.base.layers[l];
        /* the fused matrices' reserved columns are rewritten by fl_model_sync_lora below */
        scale_floats(lw->qkv, (size_t)(QD + 2 * KVD) * m.base.ld_qkv, 5.0f);
        scale_floats(lw->o, (size_t)C * QD, 5.0f);
        scale_floats(lw->gate_up, (size_t)2 * FF * m.base.ld_gate_up, 5.0f);
        scale_floats(lw->down, (size_t)C * FF, 5.0f);
    }
    float lo = 0.5f - cfg.norm_weight_offset, hi = 1.5f - cfg.norm_weight_offset;   /* Gemma: offsets from 1 */
    for (int l = 0; l < cfg.n_layers && cfg.qk_norm; l++) { /* norm weights far from 1: their product shows */
        fill(m.base.layers[l].q_norm, (size_t)(cfg.qk_norm_full ? QD : cfg.head_dim), 31 + l, lo, hi);
        fill(m.base.layers[l].k_norm, (size_t)(cfg.qk_norm_full ? KVD : cfg.head_dim), 41 + l, lo, hi);
    }
    for (int l = 0; l < cfg.n_layers && cfg.sandwich_norms; l++) { /* the post norms (Gemma, OLMo 2) */
        fill(m.base.layers[l].post_attn_norm, (size_t)C, 51 + l, lo, hi);
        fill(m.base.layers[l].post_mlp_norm, (size_t)C, 61 + l, lo, hi);
    }
    fl_model_sync_lora(&m);
    int B = 2, T = 6;
    int32_t ids[12] = {1, 5, 7, 22, 3, 3, 9, 0, 14, 2, 8, 19};
    int32_t targets[12] = {5, 7, 22, 3, 3, -100, 0, 14, 2, -100, 19, 4};
    int32_t pos[12] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 0, 1, 2};
    int32_t seg[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3};
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets, .pos = pos, .seg_start = seg};
    fl_model_forward(&m, &batch, 0.0f);
    fl_model_backward(&m);
    model_ctx ctx = {&m, &batch, m.micro_step};
    float *grad = malloc(sizeof(float) * m.grads.n);
    memcpy(grad, m.grads.data, sizeof(float) * m.grads.n);
    /* every 3rd parameter (coprime with the rank, so each A/B row and column is visited). h = 1e-3:
     * the loss (~3) is a mean of 10 tokens through two layers, so its curvature is larger than an
     * op's; f32 noise on the loss (~1e-6) then costs ~5e-4 absolute, inside the tolerance. */
    fd_compare_strided(qwen == 7 ? "olmo2 model LoRA grads" : qwen == 6 ? "granite model LoRA grads" : qwen == 5 ? "phi3 model LoRA grads" : qwen == 4 ? "gemma2 model LoRA grads" : qwen == 3 ? "gemma3 model LoRA grads"
                       : qwen == 2 ? "qwen3 model LoRA grads" : qwen ? "qwen2 model LoRA grads" : "llama3 model LoRA grads",
                       m.lora.data, grad, m.lora.n, 3,
                       1e-3f, model_loss, &ctx);
    free(grad);
    fl_model_free(&m);
}

static void model_gradcheck(int qwen, float dropout, int recompute, fl_quant quant) {
    model_gradcheck_window(qwen, dropout, recompute, quant, 0, 0);
}

TEST(gradcheck_model_llama3_rope) { model_gradcheck(0, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_llama3_rope_dropout) { model_gradcheck(0, 0.3f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_qwen2_bias_tied_rslora) { model_gradcheck(1, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_qwen2_bias_tied_rslora_dropout) { model_gradcheck(1, 0.3f, 0, FL_QUANT_NONE); }
/* activation recompute: the backward reruns each layer's forward, dropout masks regenerated */
TEST(gradcheck_model_llama3_rope_dropout_recompute) { model_gradcheck(0, 0.3f, 1, FL_QUANT_NONE); }
TEST(gradcheck_model_qwen2_bias_tied_rslora_dropout_recompute) { model_gradcheck(1, 0.3f, 1, FL_QUANT_NONE); }
/* an NF4 base (the f32 dequantization, backend matmul_nf4 ops): forward and input gradients must use
 * the same weights; with recompute too */
TEST(gradcheck_model_nf4_qwen2_bias_tied_rslora_dropout) { model_gradcheck(1, 0.3f, 0, FL_QUANT_NF4); }
TEST(gradcheck_model_nf4_llama3_rope_recompute) { model_gradcheck(0, 0.0f, 1, FL_QUANT_NF4); }
/* Qwen3: the q/k LoRA gradients pass back through q_norm and k_norm (rmsnorm_backward per head) */
TEST(gradcheck_model_qwen3_qk_norm) { model_gradcheck(2, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_qwen3_qk_norm_dropout_recompute) { model_gradcheck(2, 0.3f, 1, FL_QUANT_NONE); }
TEST(gradcheck_model_nf4_qwen3_qk_norm) { model_gradcheck(2, 0.0f, 0, FL_QUANT_NF4); }
/* Phi-3: a LoRA per fused module through partial rotary (the pass-through dims) and longrope's scale */
TEST(gradcheck_model_phi3_fused_modules_partial_rotary) { model_gradcheck(5, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_phi3_dropout_recompute) { model_gradcheck(5, 0.3f, 1, FL_QUANT_NONE); }
/* OLMo 2: the residual stream straight into q/k/v and gate/up (no pre-norm backward), the post norms'
 * backward, and the q/k LoRA gradients through whole-row q_norm/k_norm */
TEST(gradcheck_model_olmo2_post_norms) { model_gradcheck(7, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_olmo2_dropout_recompute) { model_gradcheck(7, 0.3f, 1, FL_QUANT_NONE); }
TEST(gradcheck_model_nf4_olmo2) { model_gradcheck(7, 0.0f, 0, FL_QUANT_NF4); }

/* Dropout: the mask is a pure function of (stream, index), keeps ~1-p, scales by 1/(1-p). */
TEST(dropout_mask_statistics) {
    size_t n = 100000;
    float *x = malloc(4 * n), *y = malloc(4 * n), *y2 = malloc(4 * n);
    const uint64_t stream = 42;
    for (size_t i = 0; i < n; i++) x[i] = 1.0f;
    dropout_cpu(y, x, 0.25f, &stream, n / 100, 100, 100);
    dropout_cpu(y2, x, 0.25f, &stream, n, 1, 1);   /* the mask depends on r·cols + c only */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        kept += y[i] != 0.0f;
        CHECK(y[i] == y2[i]);
        CHECK(y[i] == 0.0f || fabsf(y[i] - 1.0f / 0.75f) < 1e-6f);
    }
    /* binomial: mean 75000, sd 137 -> 5 sd */
    CHECK_MSG(kept > 74300 && kept < 75700, "kept %zu of %zu", kept, n);
    /* a strided view draws the contiguous matrix's mask: (rows, 100) read out of rows of 130 */
    float *wide = malloc(4 * 130 * (n / 100));
    for (size_t r = 0; r < n / 100; r++)
        for (int c = 0; c < 130; c++) wide[r * 130 + c] = c < 100 ? x[r * 100 + c] : NAN;
    dropout_cpu(y2, wide, 0.25f, &stream, n / 100, 100, 130);
    for (size_t i = 0; i < n; i++) CHECK(y[i] == y2[i]);
    free(x); free(y); free(y2); free(wide);
}

/* matmul_backward_weight has its own kernel when one side is a LoRA rank (<= 64): check both
 * orientations, ragged chunk tails, a last register tile of every height (rank mod 6 and mod 12:
 * 16, 3, 64, 11, 5, 33), and the sgemm path, against a double-precision sum. */
TEST(matmul_backward_weight_small_rank_kernel) {
    const int shapes[][3] = {{300, 100, 16}, {300, 16, 100}, {37, 3, 70}, {37, 70, 3}, {64, 96, 80}, {5, 33, 64},
                             {130, 45, 11}, {70, 5, 90}, {200, 64, 40}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], IC = shapes[s][1], OC = shapes[s][2];
        float *dout = malloc(sizeof(float) * N * OC), *inp = malloc(sizeof(float) * N * IC);
        float *dw = malloc(sizeof(float) * OC * IC);
        fill(dout, (size_t)N * OC, 30 + s, -1, 1);
        fill(inp, (size_t)N * IC, 40 + s, -1, 1);
        fill(dw, (size_t)OC * IC, 50 + s, -1, 1);
        double *want = malloc(sizeof(double) * OC * IC);
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < IC; i++) {
                double acc = 0;
                for (int n = 0; n < N; n++) acc += (double)dout[n * OC + o] * inp[n * IC + i];
                want[o * IC + i] = dw[o * IC + i] + 0.5 * acc;
            }
        matmul_backward_weight_cpu(dw, dout, inp, 0.5f, N, IC, OC, OC, IC);
        double worst = 0;
        for (int k = 0; k < OC * IC; k++) worst = fabs(dw[k] - want[k]) > worst ? fabs(dw[k] - want[k]) : worst;
        /* f32 sums of N products of magnitude <= 1: error ~ N · 2^-24 · sqrt(N) at worst */
        CHECK_MSG(worst <= 1e-4, "N=%d IC=%d OC=%d: max error %g", N, IC, OC, worst);
        free(dout); free(inp); free(dw); free(want);
    }
}

/* The small-rank kernel reads strided views (a projection's columns inside a fused row) and gives
 * the bitwise same result with 1 and 2 threads: every element is summed over the rows in the same
 * order whatever the split of columns among threads. N spans several row blocks. */
TEST(matmul_backward_weight_small_rank_strided_thread_independent) {
    const int shapes[][5] = {{1000, 576, 16, 40, 600}, {333, 16, 200, 216, 20}, {129, 7, 64, 64, 9}, {260, 64, 50, 64, 64}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], IC = shapes[s][1], OC = shapes[s][2], ld_dout = shapes[s][3], ld_inp = shapes[s][4];
        float *dout = malloc(sizeof(float) * N * ld_dout), *inp = malloc(sizeof(float) * N * ld_inp);
        float *dw1 = malloc(sizeof(float) * OC * IC), *dw2 = malloc(sizeof(float) * OC * IC);
        fill(dout, (size_t)N * ld_dout, 60 + s, -1, 1);
        fill(inp, (size_t)N * ld_inp, 70 + s, -1, 1);
        fill(dw1, (size_t)OC * IC, 80 + s, -1, 1);
        memcpy(dw2, dw1, sizeof(float) * OC * IC);
        double *want = malloc(sizeof(double) * OC * IC);
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < IC; i++) {
                double acc = 0;
                for (int n = 0; n < N; n++) acc += (double)dout[(size_t)n * ld_dout + o] * inp[(size_t)n * ld_inp + i];
                want[o * IC + i] = dw1[o * IC + i] - 1.25 * acc;
            }
        int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        matmul_backward_weight_cpu(dw1, dout, inp, -1.25f, N, IC, OC, ld_dout, ld_inp);
        omp_set_num_threads(threads > 1 ? threads : 2);
        matmul_backward_weight_cpu(dw2, dout, inp, -1.25f, N, IC, OC, ld_dout, ld_inp);
        omp_set_num_threads(threads);
        double worst = 0;
        int same = 1;
        for (int k = 0; k < OC * IC; k++) {
            worst = fabs(dw1[k] - want[k]) > worst ? fabs(dw1[k] - want[k]) : worst;
            same &= dw1[k] == dw2[k];
        }
        /* as above, with |alpha| 1.25 and N <= 1000: 1.25 · 1000 · 2^-24 · sqrt(1000) ~ 2.4e-3 bound */
        CHECK_MSG(worst <= 2.5e-3, "N=%d IC=%d OC=%d: max error %g", N, IC, OC, worst);
        CHECK_MSG(same, "N=%d IC=%d OC=%d: 1 and 2 threads differ", N, IC, OC);
        free(dout); free(inp); free(dw1); free(dw2); free(want);
    }
}
/* Gemma: the sandwich norms (post-attention, post-feedforward) with (1 + w) weights, GeGLU-tanh, the
 * embed scale, the query scale, per-layer RoPE; Gemma 3's q/k norms; Gemma 2's soft-capped loss and
 * attention scores */
TEST(gradcheck_model_gemma3) { model_gradcheck(3, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_gemma3_dropout_recompute) { model_gradcheck(3, 0.3f, 1, FL_QUANT_NONE); }
TEST(gradcheck_model_nf4_gemma3) { model_gradcheck(3, 0.0f, 0, FL_QUANT_NF4); }
TEST(gradcheck_model_gemma2_softcap) { model_gradcheck(4, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_gemma2_softcap_recompute) { model_gradcheck(4, 0.0f, 1, FL_QUANT_NONE); }
/* Sliding-window attention (T = 6, W = 2: row 0's later queries lose their early keys): every layer
 * windowed (Mistral), and alternating windowed/global layers (model/config.h's rule), with recompute */
TEST(gradcheck_model_granite_multipliers) { model_gradcheck(6, 0.0f, 0, FL_QUANT_NONE); }
TEST(gradcheck_model_granite_dropout_recompute) { model_gradcheck(6, 0.3f, 1, FL_QUANT_NONE); }
TEST(gradcheck_model_sliding_window) { model_gradcheck_window(0, 0.0f, 0, FL_QUANT_NONE, 2, 0); }
TEST(gradcheck_model_sliding_window_alternating_recompute) { model_gradcheck_window(0, 0.3f, 1, FL_QUANT_NONE, 2, 2); }
