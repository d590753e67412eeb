/* op_profile.c — where a training step's time goes, op by op: wraps a backend's function pointers
 * with timers and runs a few LoRA steps of a preset. A lab tool, not part of the product.
 *
 *   make && gcc -O2 -std=c11 -D_GNU_SOURCE -fopenmp -Isrc dev/cpu/op_profile.c build/libfastlora.a -o build/op_profile \
 *       -ljansson -lpcre2-8 -L/usr/lib/x86_64-linux-gnu/openblas-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm
 *   build/op_profile [preset] [B] [T] [f32|bf16] [fused|unfused] [steps]
 * "of which LoRA" counts the GEMMs with a side of at most 64 (the rank-sized ones at rank 16).
 * OMP_NUM_THREADS=1 times in thread CPU time (per-core cost, robust on a loaded machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <time.h>

#include "engine/model.h"

static fl_backend wrapped;
static const fl_backend *inner;
enum { OP_EMB, OP_NORM_F, OP_NORM_B, OP_MM_F, OP_MM_BI, OP_MM_BW, OP_MM_F_LORA, OP_MM_BI_LORA, OP_ROPE, OP_ATT_F, OP_ATT_B, OP_SWI_F, OP_SWI_B,
       OP_LOSS, OP_ADAM, OP_COPY, OP_N };
static const char *names[OP_N] = {"embedding", "rmsnorm fwd", "rmsnorm bwd", "matmul fwd", "matmul bwd input",
                                  "matmul bwd weight", "  of which LoRA fwd", "  of which LoRA bwd", "rope", "attention fwd", "attention bwd", "swiglu fwd",
                                  "swiglu bwd", "lm head + loss", "adamw", "copy/zero/add"};
static double spent[OP_N];
static long calls[OP_N];
/* With one thread every op runs on the calling thread, so its CPU time is the op's cost without
 * the time slices other processes take on a shared machine; with more, wall time. */
static clockid_t clock_id = CLOCK_MONOTONIC;
static double now(void) { struct timespec t; clock_gettime(clock_id, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define TIMED(op, call) do { double t0_ = now(); call; spent[op] += now() - t0_; calls[op]++; } while (0)

static void w_emb(void *o, const int32_t *i, const void *t, size_t N, int C) { TIMED(OP_EMB, inner->embedding_forward(o, i, t, N, C)); }
static void w_nf(void *o, float *r, const void *x, const void *w, float e, size_t N, int C, int ld) { TIMED(OP_NORM_F, inner->rmsnorm_forward(o, r, x, w, e, N, C, ld)); }
static void w_nb(void *d, const void *g, const void *x, const void *w, const float *r, size_t N, int C, int ld) { TIMED(OP_NORM_B, inner->rmsnorm_backward(d, g, x, w, r, N, C, ld)); }
static void w_mf(void *o, const void *x, const void *w, const void *b, float a, float be, size_t N, int I, int O, int lo, int li, int lw) {
    double t0 = now();
    TIMED(OP_MM_F, inner->matmul_forward(o, x, w, b, a, be, N, I, O, lo, li, lw));
    if (I <= 64 || O <= 64) { spent[OP_MM_F_LORA] += now() - t0; calls[OP_MM_F_LORA]++; }
}
static void w_mbi(void *d, const void *g, const void *w, float a, float be, size_t N, int I, int O, int ld, int lg, int lw) {
    double t0 = now();
    TIMED(OP_MM_BI, inner->matmul_backward_input(d, g, w, a, be, N, I, O, ld, lg, lw));
    if (I <= 64 || O <= 64) { spent[OP_MM_BI_LORA] += now() - t0; calls[OP_MM_BI_LORA]++; }
}
static void w_mbw(float *d, const void *g, const void *x, float a, size_t N, int I, int O, int lg, int lx) { TIMED(OP_MM_BW, inner->matmul_backward_weight(d, g, x, a, N, I, O, lg, lx)); }
static void w_rf(void *x, const int32_t *p, const float *f, float sc, size_t N, int H, int S, int RD, int ld) { TIMED(OP_ROPE, inner->rope_forward(x, p, f, sc, N, H, S, RD, ld)); }
static void w_rb(void *x, const int32_t *p, const float *f, float sc, size_t N, int H, int S, int RD, int ld) { TIMED(OP_ROPE, inner->rope_backward(x, p, f, sc, N, H, S, RD, ld)); }
static void w_af(void *o, float *l, const void *q, const void *k, const void *v, const int32_t *s, int B, int T, int NH, int NKV, int HS, int ld, float c) { TIMED(OP_ATT_F, inner->attention_forward(o, l, q, k, v, s, B, T, NH, NKV, HS, ld, c)); }
static void w_ab(void *dq, void *dk, void *dv, const void *d, const void *o, const float *l, const void *q, const void *k, const void *v, const int32_t *s, int B, int T, int NH, int NKV, int HS, int ld, float c) { TIMED(OP_ATT_B, inner->attention_backward(dq, dk, dv, d, o, l, q, k, v, s, B, T, NH, NKV, HS, ld, c)); }
static void w_sf(void *o, const void *gu, size_t N, int FF) { TIMED(OP_SWI_F, inner->swiglu_forward(o, gu, N, FF)); }
static void w_sb(void *dgu, const void *d, const void *gu, size_t N, int FF) { TIMED(OP_SWI_B, inner->swiglu_backward(dgu, d, gu, N, FF)); }
static void w_loss(void *d, float *lo, float *tl, fl_step_scalars *sc, const void *x, const int32_t *t, const void *w, size_t N, int C, int V) { TIMED(OP_LOSS, inner->lm_head_loss(d, lo, tl, sc, x, t, w, N, C, V)); }
static void w_adam(float *p, void *pw, float *m, float *v, const float *g, const fl_step_scalars *sc, float b1, float b2, float e, float wd, size_t n) { TIMED(OP_ADAM, inner->adamw_update(p, pw, m, v, g, sc, b1, b2, e, wd, n)); }
static void w_copy(void *d, const void *s, size_t b) { TIMED(OP_COPY, inner->copy(d, s, b)); }
static void w_zero(void *d, size_t b) { TIMED(OP_COPY, inner->zero(d, b)); }
static void w_add(void *a, const void *x, size_t R, int C, int ld) { TIMED(OP_COPY, inner->add_inplace(a, x, R, C, ld)); }

int main(int argc, char **argv) {
    if (omp_get_max_threads() == 1) clock_id = CLOCK_THREAD_CPUTIME_ID;
    const char *preset = argc > 1 ? argv[1] : "smollm2-135m";
    int B = argc > 2 ? atoi(argv[2]) : 4, T = argc > 3 ? atoi(argv[3]) : 256;
    inner = argc > 4 && !strcmp(argv[4], "f32") ? fl_backend_cpu() : fl_backend_cpu_bf16();
    wrapped = *inner;
    wrapped.embedding_forward = w_emb; wrapped.rmsnorm_forward = w_nf; wrapped.rmsnorm_backward = w_nb;
    wrapped.matmul_forward = w_mf; wrapped.matmul_backward_input = w_mbi; wrapped.matmul_backward_weight = w_mbw;
    wrapped.rope_forward = w_rf; wrapped.rope_backward = w_rb; wrapped.attention_forward = w_af;
    wrapped.attention_backward = w_ab; wrapped.swiglu_forward = w_sf; wrapped.swiglu_backward = w_sb;
    wrapped.lm_head_loss = w_loss; wrapped.adamw_update = w_adam; wrapped.copy = w_copy; wrapped.zero = w_zero;
    wrapped.add_inplace = w_add;
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    if (fl_model_init_preset(&m, preset, 1, &wrapped, &lc)) { fprintf(stderr, "bad preset\n"); return 2; }
    m.fused = !(argc > 5 && !strcmp(argv[5], "unfused"));
    int32_t *ids = malloc(sizeof(int32_t) * B * T), *tg = malloc(sizeof(int32_t) * B * T);
    for (int i = 0; i < B * T; i++) { ids[i] = (i * 7919) % m.cfg.vocab_size; tg[i] = (i * 104729) % m.cfg.vocab_size; }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = tg};
    fl_adamw_config opt = fl_adamw_config_default();
    int steps = argc > 6 ? atoi(argv[6]) : 3;
    if (steps < 1) steps = 1;
    double total = 0;
    for (int s = 0; s <= steps; s++) {
        if (s == 1) { memset(spent, 0, sizeof spent); memset(calls, 0, sizeof calls); }
        double t0 = now();
        fl_model_forward(&m, &batch, 0.0f);
        fl_model_backward(&m);
        fl_model_optimizer_step(&m, &opt);
        if (s > 0) total += now() - t0;
    }
    double sum = 0;
    printf("%s %d x %d on %s (%s, %s): %.1f ms/step, %.1f tok/s\n", preset, B, T, inner->name, m.fused ? "fused" : "unfused",
           clock_id == CLOCK_MONOTONIC ? "wall time" : "1 thread, CPU time", total / steps * 1e3, B * T * steps / total);
    for (int i = 0; i < OP_N; i++) {
        if (i != OP_MM_F_LORA && i != OP_MM_BI_LORA) sum += spent[i];
        printf("  %-18s %8.1f ms/step %5.1f%%  (%ld calls/step)\n", names[i], spent[i] / steps * 1e3, 100 * spent[i] / total, calls[i] / steps);
    }
    printf("  %-18s %8.1f ms/step %5.1f%%\n", "(outside ops)", (total - sum) / steps * 1e3, 100 * (total - sum) / total);
    fl_model_free(&m);
    return 0;
}
