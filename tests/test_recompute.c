/* test_recompute.c — activation recompute (engine/model.c: the forward keeps each layer's input,
 * the backward reruns the layer's forward into one slot before its backward).
 *
 * The recompute runs the same ops on the same inputs in the same order, and dropout masks are a
 * pure function of (seed, micro-step, layer, projection, index), so on the CPU the gradients, the
 * losses and the adapter after optimizer steps must equal those of the run that keeps every
 * activation BIT FOR BIT: the checks are memcmp, no tolerance. Cases: GQA, q/k/v biases with tied
 * embeddings and rsLoRA, dropout, llama3 RoPE with packed documents (pos / seg_start), partly
 * adapted groups, gradient accumulation, the fused and the unfused projections, both CPU backends,
 * and an NF4 base. The HF fixtures and finite differences with recompute on are in
 * test_hf_fixtures.c and test_gradcheck.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rng.h"
#include "engine/activations.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "test.h"

typedef struct {
    int qwen;            /* 1: q/k/v bias, tied embeddings, rsLoRA; 2: Qwen3's q_norm/k_norm, head_dim 12;
                            3: Gemma 3 (sandwich (1 + w) norms, GeGLU, embed and query scales, q/k norms,
                            a sliding layer's RoPE), 4: Gemma 2 (no q/k norms, logit soft-cap), 5: OLMo 2 (post norms
                            only, whole-row q/k norms) */
    float dropout;
    unsigned targets;    /* 0: all */
    int fused;
    fl_quant quant;
} rc_case;

static void run_steps(fl_model *m, const fl_batch *batch, int steps, int accum, double *losses, float **grads) {
    fl_adamw_config opt = fl_adamw_config_default();
    opt.lr = 1e-2f;
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < accum; k++) {
            fl_step_stats st = fl_model_forward(m, batch, 1.0f / 20.0f);
            fl_model_backward(m);
            losses[s * accum + k] = st.loss_sum;
        }
        grads[s] = malloc(sizeof(float) * m->grads.n);
        memcpy(grads[s], m->grads.data, sizeof(float) * m->grads.n);
        fl_model_optimizer_step(m, &opt);
    }
}

static void compare_recompute(const fl_backend *be, const rc_case *c) {
    fl_model_config cfg = {.arch = c->qwen == 2 ? FL_ARCH_QWEN3 : c->qwen ? FL_ARCH_QWEN2 : FL_ARCH_LLAMA,
                           .vocab_size = 41, .hidden_size = 32, .intermediate_size = 48, .n_layers = 3, .n_heads = 4,
                           .n_kv_heads = 2, .head_dim = c->qwen >= 2 ? 12 : 8, .max_position_embeddings = 64,
                           .rope_theta = 10000.0, .rms_norm_eps = 1e-5f, .tie_word_embeddings = c->qwen != 0,
                           .qkv_bias = c->qwen == 1, .qk_norm = c->qwen == 2 || c->qwen == 3};
    if (c->qwen == 5) {   /* OLMo 2: no pre-norms, post norms, q/k norms over the whole rows, untied */
        cfg.arch = FL_ARCH_OLMO2; cfg.tie_word_embeddings = 0; cfg.qkv_bias = 0;
        cfg.qk_norm = cfg.qk_norm_full = cfg.sandwich_norms = cfg.no_pre_norms = 1;
    } else if (c->qwen >= 3) {
        cfg.arch = c->qwen == 3 ? FL_ARCH_GEMMA3 : FL_ARCH_GEMMA2;
        cfg.norm_weight_offset = 1.0f;
        cfg.sandwich_norms = 1;
        cfg.act = FL_ACT_GELU_TANH;
        cfg.embed_scale = sqrt(32.0);
        cfg.query_pre_attn_scalar = 10;
        cfg.sliding_window = 4;      /* layers 0 and 1 slide (T = 9), layer 2 is global */
        cfg.window_global_every = 3;
        cfg.rope_local_theta = c->qwen == 3 ? 100.0 : 0.0;
        cfg.final_logit_softcapping = c->qwen == 4 ? 5.0f : 0.0f;
        cfg.attn_logit_softcapping = c->qwen == 4 ? 1.0f : 0.0f;
    }
    if (!c->qwen) {
        cfg.rope_llama3 = 1; cfg.rope_factor = 8; cfg.rope_low_freq_factor = 1; cfg.rope_high_freq_factor = 4;
        cfg.rope_original_max_position = 16;
    }
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.alpha = 6;
    lc.use_rslora = c->qwen == 1;
    lc.dropout = c->dropout;
    if (c->targets) lc.target_mask = c->targets;
    fl_model keep, rc;
    fl_model_init_random_quant(&keep, &cfg, 5, be, &lc, c->quant);
    fl_model_init_random_quant(&rc, &cfg, 5, be, &lc, c->quant);
    keep.fused = rc.fused = c->fused;
    rc.recompute = 1;
    /* non-zero B so both halves of every LoRA term carry gradient */
    fl_rng_fill_uniform(keep.lora.data, keep.lora.n, fl_rng_stream(3, 1, 4, 1), -0.2f, 0.2f);
    memcpy(rc.lora.data, keep.lora.data, sizeof(float) * keep.lora.n);
    fl_model_sync_lora(&keep);
    fl_model_sync_lora(&rc);
    int B = 2, T = 9;
    int32_t ids[18], targets[18], pos[18], seg[18];
    for (int i = 0; i < 18; i++) {
        ids[i] = (i * 7 + 3) % cfg.vocab_size;
        targets[i] = i % 5 == 4 ? -100 : (i * 11 + 1) % cfg.vocab_size;
        int t = i % T, second = i >= T && t >= 4;   /* row 1 packs two documents: 0..3 and 4..8 */
        pos[i] = second ? t - 4 : t;
        seg[i] = second ? 4 : 0;
    }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets, .pos = pos, .seg_start = seg};
    enum { STEPS = 2, ACCUM = 2 };
    double loss_keep[STEPS * ACCUM], loss_rc[STEPS * ACCUM];
    float *g_keep[STEPS], *g_rc[STEPS];
    run_steps(&keep, &batch, STEPS, ACCUM, loss_keep, g_keep);
    run_steps(&rc, &batch, STEPS, ACCUM, loss_rc, g_rc);
    CHECK(rc.act.recompute == 1 && keep.act.recompute == 0);
    CHECK(rc.act.bytes < keep.act.bytes);
    CHECK_MSG(!memcmp(loss_keep, loss_rc, sizeof loss_keep), "%s: losses differ with recompute (%.17g vs %.17g)",
              be->name, loss_keep[0], loss_rc[0]);
    for (int s = 0; s < STEPS; s++) {
        size_t first_diff = keep.grads.n;
        for (size_t i = 0; i < keep.grads.n && first_diff == keep.grads.n; i++)
            if (memcmp(&g_keep[s][i], &g_rc[s][i], sizeof(float))) first_diff = i;
        CHECK_MSG(first_diff == keep.grads.n, "%s step %d: gradient %zu differs with recompute: %.9g vs %.9g", be->name, s,
                  first_diff, first_diff < keep.grads.n ? g_keep[s][first_diff] : 0.0,
                  first_diff < keep.grads.n ? g_rc[s][first_diff] : 0.0);
        free(g_keep[s]);
        free(g_rc[s]);
    }
    CHECK_MSG(!memcmp(keep.lora.data, rc.lora.data, sizeof(float) * keep.lora.n), "%s: adapters differ after %d steps",
              be->name, STEPS);
    fl_model_free(&keep);
    fl_model_free(&rc);
}

static void both_backends(const rc_case *c) {
    compare_recompute(fl_backend_cpu(), c);
    compare_recompute(fl_backend_cpu_bf16(), c);
}

#define ALL ((1u << FL_N_PROJ) - 1)
#define PARTIAL ((1u << FL_PROJ_Q) | (1u << FL_PROJ_V) | (1u << FL_PROJ_UP) | (1u << FL_PROJ_DOWN))

TEST(recompute_bitwise_llama_gqa_llama3_packed) { both_backends(&(rc_case){.fused = 1}); }
TEST(recompute_bitwise_qwen2_bias_tied_rslora_dropout) { both_backends(&(rc_case){.qwen = 1, .dropout = 0.3f, .fused = 1}); }
TEST(recompute_bitwise_qwen3_qk_norm_dropout) { both_backends(&(rc_case){.qwen = 2, .dropout = 0.3f, .fused = 1}); }
TEST(recompute_bitwise_gemma3_dropout) { both_backends(&(rc_case){.qwen = 3, .dropout = 0.3f, .fused = 1}); }
TEST(recompute_bitwise_gemma2_softcap_unfused) { both_backends(&(rc_case){.qwen = 4, .fused = 0}); }
TEST(recompute_bitwise_olmo2_dropout) { both_backends(&(rc_case){.qwen = 5, .dropout = 0.3f, .fused = 1}); }
TEST(recompute_bitwise_partial_targets_dropout_unfused) {
    both_backends(&(rc_case){.dropout = 0.25f, .targets = PARTIAL, .fused = 0});
}
TEST(recompute_bitwise_nf4_base) {
    both_backends(&(rc_case){.qwen = 1, .dropout = 0.2f, .fused = 1, .quant = FL_QUANT_NF4});
    both_backends(&(rc_case){.targets = PARTIAL, .fused = 1, .quant = FL_QUANT_NF4});
}

/* The activation table with recompute: the residual stream of every layer plus ONE layer's tensors,
 * and the saving is exactly (L - 1) layers of them. */
TEST(recompute_activation_table_keeps_one_layer) {
    fl_model_config one, cfg;
    CHECK(fl_config_preset(&cfg, "smollm2-135m") == 0);
    one = cfg;
    one.n_layers = 1;
    size_t full = fl_activations_bytes(&cfg, 16, 2, 128, 4, 0), rc = fl_activations_bytes(&cfg, 16, 2, 128, 4, 1);
    size_t full1 = fl_activations_bytes(&one, 16, 2, 128, 4, 0);
    size_t residual_row = (size_t)2 * 128 * cfg.hidden_size * 4;   /* one (N, C) f32 row of the residual stream */
    /* rc = one layer's model (1 layer: residual rows 2) + the L - 1 extra residual rows */
    CHECK_EQ_INT(rc, full1 + (size_t)(cfg.n_layers - 1) * residual_row);
    CHECK(2 * rc < full);
}

/* Qwen3's q/k norms keep their inputs and rstd per layer: (QD + KVD) activations and NH + NKV rstd
 * per token and layer more than the same model without them — one layer's worth with recompute. */
TEST(recompute_activation_table_counts_qk_norm) {
    fl_model_config q3, plain;
    CHECK(fl_config_preset(&q3, "qwen3-0.6b") == 0 && q3.qk_norm);
    plain = q3;
    plain.qk_norm = 0;
    size_t N = 2 * 128, per_layer = N * (size_t)(fl_config_q_dim(&q3) + fl_config_kv_dim(&q3)) * 2 +
                                    N * (size_t)(q3.n_heads + q3.n_kv_heads) * 4;   /* bf16 acts, f32 rstd */
    for (int rc = 0; rc < 2; rc++)
        CHECK_EQ_INT(fl_activations_bytes(&q3, 16, 2, 128, 2, rc) - fl_activations_bytes(&plain, 16, 2, 128, 2, rc),
                     (rc ? 1 : (size_t)q3.n_layers) * per_layer);
}

/* The CUDA out-of-memory message (backend/cuda/cuda_context.cu) tells users which flags to try: each
 * `--flag` it names must be an option of both `fastlora train` and `fastlora bench`. Read from the
 * source, so a CPU-only build checks it too. */
TEST(cuda_oom_message_names_existing_flags) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *src = NULL, *help = NULL;
    size_t len = 0;
    CHECK(fl_file_read_all("src/backend/cuda/cuda_context.cu", FL_FILE_TEXT, &src, &len) == 0);
    const char *fn = src ? strstr(src, "void fl_cuda_die_oom(") : NULL;
    const char *end = fn ? strstr(fn, "\n}\n") : NULL;
    CHECK(fn && end);
    if (!fn || !end) { free(src); return; }
    int flags = 0;
    char out[64];
    snprintf(out, sizeof out, "/tmp/fastlora-oom-help-%d.txt", (int)getpid());
    for (const char *p = fn; p < end && (p = strstr(p, "--")) && p < end; p += 2) {
        char flag[64];
        int n = 0;
        while (n < 62 && (p[2 + n] == '-' || (p[2 + n] >= 'a' && p[2 + n] <= 'z'))) n++;
        if (!n) continue;
        snprintf(flag, sizeof flag, "--%.*s ", n, p + 2);   /* as --help lists it: "--name ARG" / "--name " */
        for (int c = 0; c < 2; c++) {
            char cmd[512];
            snprintf(cmd, sizeof cmd, "%s %s --help > %s 2>&1", bin, c ? "bench" : "train", out);
            CHECK_EQ_INT(system(cmd), 0);
            CHECK(fl_file_read_all(out, FL_FILE_TEXT, &help, &len) == 0);
            CHECK_MSG(help && strstr(help, flag), "the CUDA OOM message names %s, which `fastlora %s` does not take", flag,
                      c ? "bench" : "train");
            free(help);
            help = NULL;
        }
        flags++;
    }
    CHECK(flags >= 2);   /* --recompute, --quant, --batch, --seq */
    unlink(out);
    free(src);
}
