/* fused.cu — the memory-bound kernels standalone (RMSNorm forward/backward, RoPE, SwiGLU
 * forward/backward, AdamW over a flat buffer, the chunked LM head + cross-entropy): each checked
 * against its CPU op, then timed at the Qwen2.5-1.5B shapes for 4 x 2048 tokens and reported as
 * achieved GB/s (the fewest bytes the op must move) against the measured copy bandwidth. */
#include "lab.h"

int main(void) {
    lab_init();
    cudaStream_t s = fl_cuda.stream;
    double copy_gbs = fl_cuda_measure_copy_gbs((size_t)2 << 30, 10);
    printf("measured device-to-device copy: %.0f GB/s (read + write)\n", copy_gbs);

    /* ---- validation at small sizes ---- */
    {
        size_t N = 333;
        int C = 1536;
        auto x = lab_rand(N * C, 1, -2, 2), w = lab_rand(C, 2, 0.5f, 1.5f), dy = lab_rand(N * C, 3);
        std::vector<float> y(N * C), r(N), dx(N * C, 0.0f);
        rmsnorm_forward_cpu(y.data(), r.data(), x.data(), w.data(), 1e-6f, N, C, C);
        rmsnorm_backward_cpu(dx.data(), dy.data(), x.data(), w.data(), r.data(), N, C, C);
        bf16 *x_d = lab_dev_bf16(x), *w_d = lab_dev_bf16(w), *dy_d = lab_dev_bf16(dy), *y_d, *dx_d;
        float *r_d;
        CUDA_CHECK(cudaMalloc(&y_d, N * C * 2));
        CUDA_CHECK(cudaMalloc(&dx_d, N * C * 2));
        CUDA_CHECK(cudaMalloc(&r_d, N * 4));
        lab_poison(y_d, N * C * 2);
        lab_memset(dx_d, 0, N * C * 2);
        rmsnorm_forward(y_d, r_d, x_d, w_d, 1e-6f, N, C, C, s);
        rmsnorm_backward(dx_d, dy_d, x_d, w_d, r_d, N, C, C, s);
        lab_check("rmsnorm_forward", lab_rel_err(lab_host_bf16(y_d, N * C), y), 1e-2);
        lab_check("rmsnorm_forward rstd", lab_rel_err(lab_host_f32(r_d, N), r), 1e-5);
        lab_check("rmsnorm_backward", lab_rel_err(lab_host_bf16(dx_d, N * C), dx), 1e-2);
        /* swiglu on fused gate/up rows (N, 2·C) */
        auto g = lab_rand(N * 2 * C, 4, -6, 6);
        std::vector<float> o(N * C), dg(N * 2 * C);
        swiglu_forward_cpu(o.data(), g.data(), N, C);
        swiglu_backward_cpu(dg.data(), dy.data(), g.data(), N, C);
        bf16 *g_d = lab_dev_bf16(g), *dg_d;
        CUDA_CHECK(cudaMalloc(&dg_d, N * 2 * C * 2));
        swiglu_forward(y_d, g_d, N, C, s);
        lab_check("swiglu_forward", lab_rel_err(lab_host_bf16(y_d, N * C), o), 1e-2);
        swiglu_backward(dg_d, dy_d, g_d, N, C, s);
        lab_check("swiglu_backward dgate|dup", lab_rel_err(lab_host_bf16(dg_d, N * 2 * C), dg), 1e-2);
        CUDA_CHECK(cudaFree(dg_d));
        for (void *p : {(void *)x_d, (void *)w_d, (void *)dy_d, (void *)y_d, (void *)dx_d, (void *)r_d, (void *)g_d})
            CUDA_CHECK(cudaFree(p));
    }

    /* ---- timing at 4 x 2048 tokens, Qwen2.5-1.5B widths ---- */
    size_t N = 4 * 2048;
    int C = 1536, FF = 8960, NH = 12, HS = 128;
    bf16 *x = lab_dev_bf16(lab_rand(N * FF, 5)), *y = lab_dev_bf16(lab_rand(N * FF, 6)), *z = lab_dev_bf16(lab_rand(N * FF, 7));
    bf16 *w = lab_dev_bf16(lab_rand(C, 8, 0.5f, 1.5f)), *d1;
    CUDA_CHECK(cudaMalloc(&d1, N * FF * 2));
    float *rstd;
    CUDA_CHECK(cudaMalloc(&rstd, N * 4));
    std::vector<int32_t> pos_h(N);
    for (size_t i = 0; i < N; i++) pos_h[i] = (int32_t)(i % 2048);
    int32_t *pos = lab_dev(pos_h);
    std::vector<float> inv_h(HS / 2);
    for (int j = 0; j < HS / 2; j++) inv_h[j] = 1.0f / powf(1e6f, 2.0f * j / HS);
    float *inv = lab_dev(inv_h);
    struct { const char *name; double bytes, ms; } rows[8];
    int n = 0;
    rows[n++] = {"rmsnorm_forward", N * C * 4.0, lab_time_ms([&] { rmsnorm_forward(y, rstd, x, w, 1e-6f, N, C, C, s); })};
    rows[n++] = {"rmsnorm_backward", N * C * 8.0, lab_time_ms([&] { rmsnorm_backward(y, z, x, w, rstd, N, C, C, s); })};
    rows[n++] = {"rope_forward (q)", N * NH * HS * 4.0, lab_time_ms([&] { rope_forward(x, pos, inv, 1.0f, N, NH, HS, HS, NH * HS, s); })};
    bf16 *gu = lab_dev_bf16(lab_rand(N * 2 * FF, 12)), *dgu; /* fused gate/up rows (N, 2FF) */
    CUDA_CHECK(cudaMalloc(&dgu, N * 2 * FF * 2));
    rows[n++] = {"swiglu_forward", N * FF * 6.0, lab_time_ms([&] { swiglu_forward(d1, gu, N, FF, s); })};
    rows[n++] = {"swiglu_backward", N * FF * 10.0, lab_time_ms([&] { swiglu_backward(dgu, z, gu, N, FF, s); })};
    rows[n++] = {"add_inplace", N * C * 6.0, lab_time_ms([&] { add_inplace(y, x, N, C, C, s); })};
    size_t P = 18464768; /* Qwen2.5-1.5B rank-16 LoRA on all seven projections */
    float *pm, *pv, *pp, *pg;
    bf16 *pw;
    CUDA_CHECK(cudaMalloc(&pm, P * 4)); lab_memset(pm, 0, P * 4);
    CUDA_CHECK(cudaMalloc(&pv, P * 4)); lab_memset(pv, 0, P * 4);
    pp = lab_dev(lab_rand(P, 9));
    pg = lab_dev(lab_rand(P, 10));
    CUDA_CHECK(cudaMalloc(&pw, P * 2));
    /* the step's scalars as the engine stages them (step 3, lr 1e-4, no clipping) */
    fl_step_scalars sc_h = {};
    sc_h.grad_scale = 1.0f / N;
    sc_h.lr = 1e-4f;
    sc_h.adam_step_size = (float)(1e-4 / (1.0 - pow(0.9, 3)));
    sc_h.adam_bias2_sqrt = (float)sqrt(1.0 - pow(0.999, 3));
    sc_h.clip_scale = 1.0f;
    fl_step_scalars *sc = lab_dev(std::vector<fl_step_scalars>{sc_h});
    rows[n++] = {"adamw_update (1.5B LoRA)", P * 30.0,
                 lab_time_ms([&] { adamw_update(pp, pw, pm, pv, pg, sc, 0.9f, 0.999f, 1e-8f, 0.0f, P, s); })};
    printf("%-28s %10s %10s %8s\n", "kernel", "ms", "GB/s", "of copy");
    for (int i = 0; i < n; i++)
        printf("%-28s %10.4f %10.0f %7.0f%%\n", rows[i].name, rows[i].ms, rows[i].bytes / rows[i].ms / 1e6,
               100.0 * rows[i].bytes / rows[i].ms / 1e6 / copy_gbs);

    /* LM head: Qwen vocabulary, chunked; time vs the two GEMMs it must do (2 x 2·N·C·V FLOPs) */
    int V = 151936;
    bf16 *head = lab_dev_bf16(lab_rand((size_t)V * C, 11, -0.05f, 0.05f));
    std::vector<int32_t> tg(N);
    for (size_t i = 0; i < N; i++) tg[i] = (int32_t)(fl_hash64(i) % V);
    int32_t *tg_d = lab_dev(tg);
    double ms = lab_time_ms([&] { lm_head_loss(d1, NULL, NULL, sc, x, tg_d, head, N, C, V, s); }, 5);
    double tflops = 2.0 * 2.0 * N * C * (double)V / ms / 1e9;
    printf("lm_head_loss N=%zu C=%d V=%d: %.3f ms, %.0f TFLOP/s over its two GEMMs (chunk %zu rows)\n", N, C, V, ms, tflops,
           fl_cuda_lm_head_chunk_rows(N, V, fl_cuda_lm_head_budget()));
    printf("fused lab: %s\n", lab_failures ? "FAILED" : "all checks passed");
    return lab_failures ? 1 : 0;
}
