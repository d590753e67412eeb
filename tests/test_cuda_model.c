/* test_cuda_model.c — the CUDA engine against the CPU engine on whole models: the HF fixture
 * models (loss and LoRA gradients), determinism of a seeded run, 50 steps that track the CPU's,
 * and a whole step recorded as a CUDA graph and replayed equal to op by op. Compiled only with
 * CUDA (FL_HAVE_CUDA); every test SKIPs without a device. Tolerances as test_cuda_ops.c states. */
#ifdef FL_HAVE_CUDA

#include <jansson.h>

#include "cuda_test_util.h"

/* ---- model tests: the HF fixtures on CUDA vs the CPU engine ---- */

#define FIXTURE_DIR "tests/fixtures/hf/"

typedef struct {
    fl_model model;
    fl_batch batch;
    int32_t *ids, *targets;
} run;

static int run_open(run *r, const char *name, const fl_backend *be) {
    char model_dir[256], adapter_dir[256], expected_path[256];
    snprintf(model_dir, sizeof model_dir, FIXTURE_DIR "%s/model", name);
    snprintf(adapter_dir, sizeof adapter_dir, FIXTURE_DIR "%s/adapter", name);
    snprintf(expected_path, sizeof expected_path, FIXTURE_DIR "%s/expected.safetensors", name);
    fl_lora_config lc;
    fl_safetensors st;
    memset(r, 0, sizeof *r);
    if (fl_adapter_load_config(adapter_dir, &lc) || fl_model_init_dir(&r->model, model_dir, be, &lc) ||
        fl_model_load_adapter(&r->model, adapter_dir) || fl_safetensors_open(&st, expected_path)) {
        fl_test_fail(__FILE__, __LINE__, "fixture %s on %s: %s", name, be->name, fl_last_error());
        return 1;
    }
    const fl_st_tensor *ids = fl_safetensors_find(&st, "input_ids"), *labels = fl_safetensors_find(&st, "labels");
    int B = (int)ids->shape[0], T = (int)ids->shape[1];
    r->ids = malloc(sizeof(int32_t) * (size_t)B * T);
    r->targets = malloc(sizeof(int32_t) * (size_t)B * T);
    memcpy(r->ids, ids->data, sizeof(int32_t) * (size_t)B * T);
    const int32_t *lab = labels->data;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) r->targets[b * T + t] = t + 1 < T ? lab[b * T + t + 1] : -100;
    r->batch = (fl_batch){.B = B, .T = T, .ids = r->ids, .targets = r->targets};
    fl_safetensors_close(&st);
    return 0;
}

static void run_close(run *r) {
    fl_model_free(&r->model);
    free(r->ids);
    free(r->targets);
}

static float *host_copy(const fl_lora_buffer *buf) {
    float *h = malloc(sizeof(float) * buf->n);
    buf->be->download(h, buf->data, sizeof(float) * buf->n);
    return h;
}

static void fixture_vs_cpu(const char *name) {
    CUDA_OR_SKIP(cu);
    run a, b;
    if (run_open(&a, name, fl_backend_cpu())) return;
    if (run_open(&b, name, cu)) { run_close(&a); return; }
    fl_step_stats sa = fl_model_forward(&a.model, &a.batch, 0.0f), sb = fl_model_forward(&b.model, &b.batch, 0.0f);
    CHECK_EQ_INT(sb.n_counted, sa.n_counted);
    CHECK_MSG(fabs(sb.loss - sa.loss) <= 1e-2 * fabs(sa.loss), "%s: loss cuda %.6f vs cpu %.6f", name, sb.loss, sa.loss);
    fl_model_backward(&a.model);
    fl_model_backward(&b.model);
    float *ga = host_copy(&a.model.grads), *gb = host_copy(&b.model.grads);
    /* LoRA gradients through two bf16 layers: 5% relative L2 over the whole buffer */
    double e = rel_err(gb, ga, a.model.grads.n);
    CHECK_MSG(e <= 5e-2, "%s: LoRA gradient rel err %.3g", name, e);
    free(ga); free(gb);
    run_close(&a);
    run_close(&b);
}

TEST(cuda_model_llama_gqa) { fixture_vs_cpu("llama_gqa"); }
TEST(cuda_model_qwen2_bias_tied) { fixture_vs_cpu("qwen2_bias_tied"); }
TEST(cuda_model_llama3_rope) { fixture_vs_cpu("llama3_rope"); }
TEST(cuda_model_llama_dynamic_ntk) { fixture_vs_cpu("llama_dynamic_ntk"); }
TEST(cuda_model_qwen3_qk_norm) { fixture_vs_cpu("qwen3_qk_norm"); }
TEST(cuda_model_phi3_longrope) { fixture_vs_cpu("phi3_longrope"); }
TEST(cuda_model_gemma3_sandwich) { fixture_vs_cpu("gemma3_sandwich"); }
TEST(cuda_model_gemma3_vlm) { fixture_vs_cpu("gemma3_vlm"); }
TEST(cuda_model_mistral3_vlm) { fixture_vs_cpu("mistral3_vlm"); }
TEST(cuda_model_ministral3_llama4) { fixture_vs_cpu("ministral3_llama4"); }
TEST(cuda_model_smollm3_nope) { fixture_vs_cpu("smollm3_nope"); }
TEST(cuda_model_granite_multipliers) { fixture_vs_cpu("granite_multipliers"); }
TEST(cuda_model_gemma_geglu) { fixture_vs_cpu("gemma_geglu"); }
TEST(cuda_model_gemma2_softcap) { fixture_vs_cpu("gemma2_softcap"); }
TEST(cuda_model_olmo2_post_norms) { fixture_vs_cpu("olmo2_post_norms"); } /* post norms only, whole-row q/k norms */
TEST(cuda_model_gemma2_attn_softcap) { fixture_vs_cpu("gemma2_attn_softcap"); } /* attention soft-cap 0.2, window 5 */
TEST(cuda_model_mistral_swa) { fixture_vs_cpu("mistral_swa"); } /* sliding window 5 over 16 positions */
TEST(cuda_model_qwen3_yarn) { fixture_vs_cpu("qwen3_yarn"); }
TEST(cuda_model_olmo3_sliding_yarn) { fixture_vs_cpu("olmo3_sliding_yarn"); }
TEST(cuda_model_qwen3_swa) { fixture_vs_cpu("qwen3_swa"); } /* window 4 over 12 positions on layers 1, 2 */

/* n AdamW steps on the fixture batch; returns the adapter on the host, losses in `losses` */
static float *train_steps(const char *name, const fl_backend *be, int steps, double *losses) {
    run r;
    if (run_open(&r, name, be)) return NULL;
    fl_adamw_config opt = fl_adamw_config_default();
    opt.lr = 1e-3f;
    for (int s = 0; s < steps; s++) {
        fl_step_stats st = fl_model_forward(&r.model, &r.batch, 0.0f);
        fl_model_backward(&r.model);
        fl_model_optimizer_step(&r.model, &opt);
        if (losses) losses[s] = st.loss;
    }
    float *h = host_copy(&r.model.lora);
    run_close(&r);
    return h;
}

TEST(cuda_determinism_same_seed_same_adapter) {
    CUDA_OR_SKIP(cu);
    run r;
    if (run_open(&r, "llama_gqa", cu)) return;
    size_t n = r.model.lora.n;
    run_close(&r);
    float *a = train_steps("llama_gqa", cu, 5, NULL), *b = train_steps("llama_gqa", cu, 5, NULL);
    CHECK(a && b && memcmp(a, b, sizeof(float) * n) == 0); /* bitwise */
    free(a); free(b);
}

TEST(cuda_50_steps_track_cpu) {
    CUDA_OR_SKIP(cu);
    double lc[50], lg[50];
    float *a = train_steps("llama_gqa", fl_backend_cpu(), 50, lc), *b = train_steps("llama_gqa", cu, 50, lg);
    int worst = 0;
    for (int s = 0; s < 50; s++)
        if (fabs(lg[s] - lc[s]) > fabs(lg[worst] - lc[worst])) worst = s;
    CHECK_MSG(fabs(lg[worst] - lc[worst]) <= 3e-2 * lc[worst] + 1e-2, "step %d: loss cuda %.5f vs cpu %.5f", worst,
              lg[worst], lc[worst]);
    CHECK_MSG(lg[49] < lg[0], "CUDA loss did not decrease: %.4f -> %.4f", lg[0], lg[49]);
    printf("    loss step 1 / 50: cpu %.4f / %.4f, cuda %.4f / %.4f\n", lc[0], lc[49], lg[0], lg[49]);
    free(a); free(b);
}

/* ---- preference tuning on CUDA: the per-token losses and weights (token_loss, scale_rows) ---- */

/* dpo and orpo steps of the TRL fixture (tests/fixtures/pref_train) through the CLI on CUDA (bf16
 * weights) against the CPU reference (f32): loss and rewards at bf16's ~1e-2 relative. */
static double pref_first_loss(const char *device, const char *objective, const char *key, char *dir) {
    char args[1024], path[600], line[4096];
    snprintf(args, sizeof args, "%s timeout 120 %s train --objective %s --model tests/fixtures/pref_train/model --data "
             "tests/fixtures/pref_train/standard.jsonl --adapter tests/fixtures/pref_train/start --seq 48 --batch 2 "
             "--max-steps 1 --save-every 0 --device %s --out %s/%s-%s >/dev/null 2>&1", "", getenv("FASTLORA_BIN"),
             objective, device, dir, device, objective);
    if (system(args) != 0) return NAN;
    snprintf(path, sizeof path, "%s/%s-%s/metrics.jsonl", dir, device, objective);
    FILE *f = fopen(path, "r");
    double v = NAN;
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        if (o && json_object_get(o, "loss")) v = json_number_value(json_object_get(o, key));
        json_decref(o);
    }
    if (f) fclose(f);
    return v;
}

TEST(cuda_preference_step_tracks_cpu) {
    CUDA_OR_SKIP(cu);
    (void)cu;
    if (!getenv("FASTLORA_BIN")) SKIP("no FASTLORA_BIN");
    char dir[] = "/tmp/fastlora-cuda-pref-XXXXXX";
    if (!mkdtemp(dir)) SKIP("mkdtemp failed");
    const char *objectives[] = {"dpo", "orpo"}, *keys[] = {"loss", "logps/chosen", "grad_norm"};
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < 3; k++) {
            double c = pref_first_loss("cpu", objectives[o], keys[k], dir), g = pref_first_loss("cuda", objectives[o], keys[k], dir);
            CHECK_MSG(isfinite(c) && isfinite(g) && fabs(g - c) <= 2e-2 * fabs(c) + 1e-3, "%s %s: cuda %.6g vs cpu %.6g",
                      objectives[o], keys[k], g, c);
        }
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm)) {}
}

/* ---- a whole step recorded as a CUDA graph and replayed ---- */

/* Two identical models (head size 64: the tensor-core attention; LoRA dropout 0.1; q/k/v bias),
 * one recording its step once and replaying it (m->graphs = 1), one running every step op by op:
 * 6 steps of 2 micro-batches whose tokens, positions, documents and learning rate change every step,
 * so a replay that read a stale input would differ. Step 4's second micro-batch has no counted token
 * (another shape of step: run op by op and recorded apart); the later steps replay the first
 * recording again. Loss, counted tokens, gradient norm, and at the end the LoRA parameters and both
 * AdamW moments must be equal bit for bit. */
TEST(cuda_graph_replay_equals_op_by_op) {
    CUDA_OR_SKIP(cu);
    fl_model_config cfg = {.arch = FL_ARCH_QWEN2, .vocab_size = 1000, .hidden_size = 256, .intermediate_size = 512,
                           .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 64, .max_position_embeddings = 512,
                           .rope_theta = 10000.0, .rms_norm_eps = 1e-6f, .qkv_bias = 1};
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 8;
    lc.dropout = 0.1f;
    fl_model a, b;
    fl_model_init_random(&a, &cfg, 5, cu, &lc);
    fl_model_init_random(&b, &cfg, 5, cu, &lc);
    b.graphs = 0;
    int B = 2, T = 128, A = 2;
    size_t N = (size_t)B * T;
    int32_t *buf = malloc(sizeof(int32_t) * 4 * N * A);
    fl_batch micro[2];
    fl_adamw_config opt = fl_adamw_config_default();
    opt.max_grad_norm = 0.5f; /* clipping active */
    for (int step = 0; step < 6; step++) {
        for (int i = 0; i < A; i++) {
            int32_t *ids = buf + 4 * N * i, *tg = ids + N, *pos = ids + 2 * N, *seg = ids + 3 * N;
            for (size_t t = 0; t < N; t++) {
                ids[t] = (int32_t)(fl_hash64((uint64_t)step * 7919 + i * 104729 + t) % cfg.vocab_size);
                tg[t] = step == 3 && i == 1 ? -100 : (int32_t)(fl_hash64(t * 31 + step) % cfg.vocab_size);
                int doc = (int)(t % T) < 40 + 10 * step ? 0 : 40 + 10 * step; /* a document boundary that moves */
                pos[t] = (int32_t)(t % T) - doc;
                seg[t] = doc;
            }
            micro[i] = (fl_batch){.B = B, .T = T, .ids = ids, .targets = tg, .pos = pos, .seg_start = seg};
        }
        opt.lr = 1e-3f * (float)(step + 1);
        double na, nb;
        fl_step_stats sa = fl_model_train_step(&a, micro, A, &opt, &na);
        fl_step_stats sb = fl_model_train_step(&b, micro, A, &opt, &nb);
        CHECK_MSG(sa.loss_sum == sb.loss_sum && sa.n_counted == sb.n_counted && na == nb,
                  "step %d: graph loss %.9g (%zu tokens) norm %.9g vs op by op %.9g (%zu) %.9g", step + 1, sa.loss_sum,
                  sa.n_counted, na, sb.loss_sum, sb.n_counted, nb);
    }
    CHECK_EQ_INT(fl_model_replayed_steps(&a), 4); /* steps 2, 3, 5 and 6 */
    CHECK_EQ_INT(fl_model_replayed_steps(&b), 0);
    const fl_lora_buffer *bufs_a[3] = {&a.lora, &a.adam_m, &a.adam_v}, *bufs_b[3] = {&b.lora, &b.adam_m, &b.adam_v};
    for (int k = 0; k < 3; k++) {
        float *ha = host_copy(bufs_a[k]), *hb = host_copy(bufs_b[k]);
        CHECK_MSG(memcmp(ha, hb, sizeof(float) * bufs_a[k]->n) == 0, "buffer %d (LoRA, m, v) differs", k);
        free(ha); free(hb);
    }
    free(buf);
    fl_model_free(&a);
    fl_model_free(&b);
}

#endif /* FL_HAVE_CUDA */
