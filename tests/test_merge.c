/* test_merge.c — `fastlora merge`: the merged folder's logits equal base + adapter logits; every
 * tensor keeps its dtype (a BF16, sharded copy of a fixture stays BF16 and sharded, with its index);
 * untouched tensors are byte-identical; config and other files are copied; a mismatched adapter is
 * a clear error. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dtype.h"
#include "common/error.h"
#include "engine/model.h"
#include "infer/merge.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "model/weights.h"
#include "cli_run.h"
#include "test.h"

static void rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

/* logits (T, V) of `model` (+ `adapter` when not NULL) on the f32 CPU backend */
static float *logits_of(const char *model, const char *adapter, const int32_t *ids, int T, int *V) {
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 1;
    if (adapter && fl_adapter_load_config(adapter, &lc)) return NULL;
    fl_model m;
    if (fl_model_init_dir(&m, model, fl_backend_cpu(), &lc)) { printf("    %s\n", fl_last_error()); return NULL; }
    if (adapter && fl_model_load_adapter(&m, adapter)) { fl_model_free(&m); return NULL; }
    *V = m.cfg.vocab_size;
    float *out = malloc(sizeof(float) * (size_t)T * *V);
    fl_model_logits(&m, ids, 1, T, out);
    fl_model_free(&m);
    return out;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* Phi-3: a LoRA on a fused module (qkv_proj: lora_a (R, C), lora_b ((QD + 2·KVD), R); gate_up_proj)
 * folds into the fused matrix: every merged weight of the four adapted modules equals base + s·B·A
 * computed here in double (f32 storage: within 1 ulp of the result plus the f32 product's rounding,
 * R + 1 terms: 1e-6 relative to the largest term), the rest are untouched, and the merged folder's
 * logits equal base + adapter (as the llama test). */
TEST(merge_phi3_fused_modules_fold_into_the_fused_weights) {
    const char *model = "tests/fixtures/hf/phi3_longrope/model", *adapter = "tests/fixtures/hf/phi3_longrope/adapter";
    char out[] = "/tmp/fastlora-merge-XXXXXX";
    CHECK(mkdtemp(out) != NULL);
    CHECK(fl_merge_adapter(model, adapter, out, 0) == 0);
    fl_lora_config lc;
    CHECK(fl_adapter_load_config(adapter, &lc) == 0);
    double s = lc.alpha / lc.rank;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/model.safetensors", model);
    snprintf(b, sizeof b, "%s/model.safetensors", out);
    fl_safetensors base, merged, ad;
    CHECK(fl_safetensors_open(&base, a) == 0 && fl_safetensors_open(&merged, b) == 0);
    char ap[512];
    snprintf(ap, sizeof ap, "%s/adapter_model.safetensors", adapter);
    CHECK(fl_safetensors_open(&ad, ap) == 0);
    const char *modules[] = {"self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj"};
    int checked = 0, changed = 0;
    double worst = 0;
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 4; k++) {
            char wn[160], an[200], bn[200];
            snprintf(wn, sizeof wn, "model.layers.%d.%s.weight", l, modules[k]);
            snprintf(an, sizeof an, "base_model.model.model.layers.%d.%s.lora_A.weight", l, modules[k]);
            snprintf(bn, sizeof bn, "base_model.model.model.layers.%d.%s.lora_B.weight", l, modules[k]);
            const fl_st_tensor *w = fl_safetensors_find(&base, wn), *m = fl_safetensors_find(&merged, wn);
            const fl_st_tensor *ta = fl_safetensors_find(&ad, an), *tb = fl_safetensors_find(&ad, bn);
            CHECK(w && m && ta && tb && w->dtype == FL_F32 && m->dtype == FL_F32);
            if (!w || !m || !ta || !tb) continue;
            int64_t OC = w->shape[0], IC = w->shape[1], R = ta->shape[0];
            CHECK(tb->shape[0] == OC && ta->shape[1] == IC);   /* one B over the whole fused output */
            const float *W = w->data, *M = m->data, *A = ta->data, *B = tb->data;
            for (int64_t i = 0; i < OC; i++)
                for (int64_t j = 0; j < IC; j++) {
                    double want = W[i * IC + j], big = fabs(want);
                    for (int64_t r = 0; r < R; r++) {
                        want += s * (double)B[i * R + r] * A[r * IC + j];
                        big = fmax(big, fabs(s * (double)B[i * R + r] * A[r * IC + j]));
                    }
                    double d = fabs(M[i * IC + j] - want) / (big + 1e-30);
                    worst = fmax(worst, d);
                }
            checked++;
        }
    for (int i = 0; i < base.n_tensors; i++) {
        const fl_st_tensor *t = &base.tensors[i], *u = fl_safetensors_find(&merged, t->name);
        CHECK(u && u->nbytes == t->nbytes);
        if (u && memcmp(t->data, u->data, t->nbytes)) changed++;
    }
    printf("    merged fused weights vs base + s·B·A (double): worst %.2e relative to the largest term\n", worst);
    CHECK(worst < 1e-6);
    CHECK_EQ_INT(checked, 8);
    CHECK_EQ_INT(changed, 8);   /* 2 layers x 4 modules; norms and embeddings untouched */
    fl_safetensors_close(&base);
    fl_safetensors_close(&merged);
    fl_safetensors_close(&ad);
    int32_t ids[12];
    for (int i = 0; i < 12; i++) ids[i] = (i * 29 + 3) % 64;
    int V = 0, V2 = 0;
    float *ref = logits_of(model, adapter, ids, 12, &V), *got = logits_of(out, NULL, ids, 12, &V2);
    CHECK(ref && got && V == V2);
    if (ref && got) {
        double d = max_diff(ref, got, 12 * (size_t)V);
        printf("    max |logit diff| merged vs base+adapter: %.2e\n", d);
        CHECK(d < 1e-4);
    }
    free(ref);
    free(got);
    rm_rf(out);
}

/* fixture `name` merged: the logits of the merged folder equal those of base + adapter */
static void merge_f32_case(const char *name, int vocab) {
    char model[128], adapter[128];
    snprintf(model, sizeof model, "tests/fixtures/hf/%s/model", name);
    snprintf(adapter, sizeof adapter, "tests/fixtures/hf/%s/adapter", name);
    char out[] = "/tmp/fastlora-merge-XXXXXX";
    CHECK(mkdtemp(out) != NULL);
    CHECK(fl_merge_adapter(model, adapter, out, 0) == 0);
    int32_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = (i * 41 + 5) % vocab;
    int V = 0, V2 = 0;
    float *ref = logits_of(model, adapter, ids, 16, &V), *got = logits_of(out, NULL, ids, 16, &V2);
    CHECK(ref && got && V == V2);
    if (ref && got) {
        double d = max_diff(ref, got, 16 * (size_t)V);
        printf("    max |logit diff| merged vs base+adapter: %.2e\n", d);
        CHECK(d < 1e-4);
        float *base = logits_of(model, NULL, ids, 16, &V);
        CHECK(max_diff(base, ref, 16 * (size_t)V) > 1e-2); /* the adapter does change the logits */
        free(base);
    }
    /* names, dtypes, untouched tensors byte-identical, config copied */
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/model.safetensors", model);
    snprintf(b, sizeof b, "%s/model.safetensors", out);
    fl_safetensors sa, sb;
    CHECK(fl_safetensors_open(&sa, a) == 0 && fl_safetensors_open(&sb, b) == 0);
    CHECK_EQ_INT(sa.n_tensors, sb.n_tensors);
    int changed = 0;
    for (int i = 0; i < sa.n_tensors; i++) {
        const fl_st_tensor *t = &sa.tensors[i], *u = fl_safetensors_find(&sb, t->name);
        CHECK(u && u->dtype == t->dtype && u->nbytes == t->nbytes);
        if (u && memcmp(t->data, u->data, t->nbytes)) changed++;
    }
    CHECK_EQ_INT(changed, 2 * 7); /* 2 layers x 7 adapted projections */
    fl_safetensors_close(&sa);
    fl_safetensors_close(&sb);
    snprintf(b, sizeof b, "%s/config.json", out);
    CHECK(fl_file_exists(b));
    snprintf(b, sizeof b, "%s/generation_config.json", out);
    CHECK(fl_file_exists(b));
    free(ref);
    free(got);
    rm_rf(out);
}

TEST(merge_f32_logits_equal_base_plus_adapter) { merge_f32_case("llama_gqa", 200); }
/* Gemma 3: the merge writes the projections and copies every other tensor (the four norms per layer,
 * q/k norms) as they are; nothing in it is Gemma-specific */
TEST(merge_f32_gemma3_logits_equal_base_plus_adapter) { merge_f32_case("gemma3_sandwich", 96); }
/* OLMo 2: no input_layernorm; the post norms and whole-row q/k norms copied as they are */
TEST(merge_f32_olmo2_logits_equal_base_plus_adapter) { merge_f32_case("olmo2_post_norms", 96); }
/* Gemma3ForConditionalGeneration: the language model's projections (language_model.model.layers.*)
 * merged, the vision tower and projector copied byte for byte (the untouched-tensor check below) */
TEST(merge_f32_gemma3_vision_language_keeps_the_vision_tower) { merge_f32_case("gemma3_vlm", 90); }
/* Mistral3ForConditionalGeneration: the same, with the untied head copied too */
TEST(merge_f32_mistral3_vision_language_keeps_the_vision_tower) { merge_f32_case("mistral3_vlm", 90); }

/* A BF16 copy of a fixture model, in two shards with an index. */
static int write_bf16_sharded(const char *src, const char *dst) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    fl_safetensors st;
    if (fl_safetensors_open(&st, path)) return 1;
    int n = st.n_tensors, half = n / 2;
    fl_st_write_tensor *t = calloc((size_t)n, sizeof *t);
    uint16_t **bufs = calloc((size_t)n, sizeof *bufs);
    json_t *map = json_object();
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const fl_st_tensor *s = &st.tensors[i];
        bufs[i] = malloc(s->numel * 2 + 2);
        for (size_t k = 0; k < s->numel; k++) bufs[i][k] = fl_f32_to_bf16(((const float *)s->data)[k]);
        t[i] = (fl_st_write_tensor){.name = s->name, .dtype = FL_BF16, .ndim = s->ndim, .data = bufs[i]};
        memcpy(t[i].shape, s->shape, sizeof s->shape);
        json_object_set_new(map, s->name, json_string(i < half ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors"));
        total += s->numel * 2;
    }
    const char *meta[] = {"format", "pt"};
    int rc = 0;
    snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", dst);
    rc |= fl_safetensors_write(path, t, half, meta, 1);
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dst);
    rc |= fl_safetensors_write(path, t + half, n - half, meta, 1);
    json_t *index = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total, "weight_map", map);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dst);
    rc |= json_dump_file(index, path, JSON_INDENT(2));
    json_decref(index);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp %s/config.json %s/generation_config.json %s/", src, src, dst);
    rc |= system(cmd);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(t);
    fl_safetensors_close(&st);
    return rc;
}

TEST(merge_bf16_sharded_keeps_dtype_and_shards) {
    const char *src = "tests/fixtures/hf/qwen2_bias_tied/model", *adapter = "tests/fixtures/hf/qwen2_bias_tied/adapter";
    char dir[] = "/tmp/fastlora-merge16-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char base[600], out[600], path[700];
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(out, sizeof out, "%s/merged", dir);
    fl_mkdir_p(base);
    CHECK(write_bf16_sharded(src, base) == 0);
    CHECK(fl_merge_adapter(base, adapter, out, 0) == 0);
    const char *shards[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    int bf16 = 0, total = 0;
    for (int s = 0; s < 2; s++) {
        snprintf(path, sizeof path, "%s/%s", out, shards[s]);
        fl_safetensors st;
        CHECK(fl_safetensors_open(&st, path) == 0);
        for (int i = 0; i < st.n_tensors; i++) { bf16 += st.tensors[i].dtype == FL_BF16; total++; }
        fl_safetensors_close(&st);
    }
    CHECK(total > 0 && bf16 == total);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", out);
    CHECK(fl_file_exists(path));
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    CHECK(!fl_file_exists(path));
    int32_t ids[12];
    for (int i = 0; i < 12; i++) ids[i] = (i * 29 + 3) % 160;
    int V = 0;
    float *ref = logits_of(base, adapter, ids, 12, &V), *got = logits_of(out, NULL, ids, 12, &V);
    CHECK(ref && got);
    if (ref && got) {
        double d = max_diff(ref, got, 12 * (size_t)V);
        printf("    bf16: max |logit diff| merged vs base+adapter: %.2e (one bf16 rounding of W + s·B·A)\n", d);
        CHECK(d < 5e-2);
    }
    free(ref);
    free(got);
    rm_rf(dir);
}

TEST(merge_bad_input_adapter_of_another_model) {
    char out[] = "/tmp/fastlora-mergebad-XXXXXX";
    CHECK(mkdtemp(out) != NULL);
    int rc = fl_merge_adapter("tests/fixtures/hf/llama_gqa/model", "tests/fixtures/hf/qwen2_bias_tied/adapter", out, 0);
    CHECK_EQ_INT(rc, FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "wrong shape");
    rc = fl_merge_adapter("tests/fixtures/hf/llama_gqa/model", "/nonexistent", out, 0);
    CHECK_EQ_INT(rc, FL_ERR_INPUT);
    rm_rf(out);
}

/* A config.json claiming 1e8 layers must be an error before anything is allocated from it. */
TEST(merge_bad_input_config_sizes_checked_before_allocation) {
    char dir[] = "/tmp/fastlora-merge-big-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char cmd[512], out[600];
    snprintf(cmd, sizeof cmd, "cp tests/fixtures/hf/llama_gqa/model/* %s/ && sed -i 's/\"num_hidden_layers\": 2/"
             "\"num_hidden_layers\": 100000000/' %s/config.json", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(out, sizeof out, "%s/out", dir);
    CHECK_EQ_INT(fl_merge_adapter(dir, "tests/fixtures/hf/llama_gqa/adapter", out, 0), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "100000000 layers");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* ---- where the merged folder may go ------------------------------------------------------------ */

static void touch(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
}

/* `merge --out` equal to --model wrote the merged weights over the base's model.safetensors, and a
 * non-empty --out was written into silently. Now: never the model or adapter folder (however it is
 * spelled: a trailing '/', a symlink), a non-empty folder only with --force, and even then the base's
 * files are never written through (a hard link to them in --out is replaced, not written). */
TEST(merge_bad_input_out_is_an_input_or_not_empty) {
    const char *fixture = "tests/fixtures/hf/llama_gqa/model", *adapter = "tests/fixtures/hf/llama_gqa/adapter";
    char dir[] = "/tmp/fastlora-mergeout-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char base[600], path[700], other[600], cmd[1400];
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/* %s/", base, fixture, base);
    CHECK_EQ_INT(system(cmd), 0);
    char base_weights[700], fixture_weights[700];
    snprintf(base_weights, sizeof base_weights, "%s/model.safetensors", base);
    snprintf(fixture_weights, sizeof fixture_weights, "%s/model.safetensors", fixture);
    /* the model folder itself, spelled three ways, with and without --force */
    char spellings[3][700];
    snprintf(spellings[0], sizeof spellings[0], "%s", base);
    snprintf(spellings[1], sizeof spellings[1], "%s/./base/", dir);
    snprintf(spellings[2], sizeof spellings[2], "%s/link", dir);
    CHECK(symlink(base, spellings[2]) == 0);
    for (int i = 0; i < 3; i++)
        for (int force = 0; force < 2; force++) {
            CHECK_EQ_INT(fl_merge_adapter(base, adapter, spellings[i], force), FL_ERR_INPUT);
            CHECK_STR_CONTAINS(fl_last_error(), "is the input folder");
        }
    CHECK(cr_files_equal(base_weights, fixture_weights));
    CHECK_EQ_INT(fl_merge_adapter(base, adapter, adapter, 1), FL_ERR_INPUT); /* the adapter folder */
    CHECK_STR_CONTAINS(fl_last_error(), "is the input folder");
    /* a non-empty folder: refused without --force, nothing written */
    snprintf(other, sizeof other, "%s/other", dir);
    fl_mkdir_p(other);
    snprintf(path, sizeof path, "%s/notes.txt", other);
    touch(path, "mine\n");
    CHECK_EQ_INT(fl_merge_adapter(base, adapter, other, 0), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "not empty");
    CHECK_STR_CONTAINS(fl_last_error(), "--force");
    snprintf(path, sizeof path, "%s/config.json", other);
    CHECK(!fl_file_exists(path));
    /* --force: written into it; its own files stay; a hard link to the base's weights is replaced, so
     * the base is unchanged; stale weights of another model (a shard and its index) are removed */
    snprintf(path, sizeof path, "%s/model.safetensors", other);
    CHECK(link(base_weights, path) == 0);
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", other);
    touch(path, "stale");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", other);
    touch(path, "{}");
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", other);
    touch(path, "not a weight file of the model");
    CHECK_EQ_INT(fl_merge_adapter(base, adapter, other, 1), 0);
    CHECK(cr_files_equal(base_weights, fixture_weights));
    snprintf(path, sizeof path, "%s/model.safetensors", other);
    CHECK(!cr_files_equal(path, fixture_weights)); /* the merged weights */
    const char *kept[] = {"notes.txt", "adapter_model.safetensors", "config.json", "generation_config.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", other, kept[i]);
        CHECK_MSG(fl_file_exists(path), "%s missing", path);
    }
    const char *gone[] = {"model-00002-of-00002.safetensors", "model.safetensors.index.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", other, gone[i]);
        CHECK_MSG(!fl_file_exists(path), "%s left beside the merged weights", path);
    }
    /* an empty existing folder needs no --force; a missing one is created with its parents */
    snprintf(path, sizeof path, "%s/empty", dir);
    fl_mkdir_p(path);
    CHECK_EQ_INT(fl_merge_adapter(base, adapter, path, 0), 0);
    snprintf(path, sizeof path, "%s/new/deeper", dir);
    CHECK_EQ_INT(fl_merge_adapter(base, adapter, path, 0), 0);
    snprintf(path, sizeof path, "%s/new/deeper/model.safetensors", dir);
    CHECK(fl_file_exists(path));
    /* the CLI: exit status 2 and one line */
    const char *bin = getenv("FASTLORA_BIN");
    if (bin && access(bin, X_OK) == 0) {
        snprintf(cmd, sizeof cmd, "%s merge --model %s --adapter %s --out %s --force 2>%s/err.txt", bin, base, adapter, base,
                 dir);
        int rc = system(cmd);
        CHECK_EQ_INT(WEXITSTATUS(rc), 2);
        snprintf(path, sizeof path, "%s/err.txt", dir);
        FILE *f = fopen(path, "r");
        char line[1024] = "", extra[64] = "";
        if (f) {
            CHECK(fgets(line, sizeof line, f) != NULL);
            CHECK(fgets(extra, sizeof extra, f) == NULL);
            fclose(f);
        }
        CHECK_STR_CONTAINS(line, "is the input folder");
        CHECK(cr_files_equal(base_weights, fixture_weights));
    }
    rm_rf(dir);
}

/* The fixture model with one tensor's stored shape replaced by (r, c) (c == 0: 1-D [r]); train's load
 * (with the LoRA columns reserved in the fused q/k/v and gate/up matrices, as the engine asks) and
 * merge must both refuse it with the same message, naming the tensor's HF shape. */
static void base_shape_case(const char *tensor, int64_t r, int64_t c, const char *expect) {
    char dir[] = "/tmp/fastlora-mergeshape-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char src[700], dst[700], out[700];
    snprintf(src, sizeof src, "tests/fixtures/hf/llama_gqa/model/model.safetensors");
    snprintf(dst, sizeof dst, "%s/model.safetensors", dir);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, src) == 0);
    fl_st_write_tensor *t = calloc((size_t)st.n_tensors, sizeof *t);
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *s = &st.tensors[i];
        t[i] = (fl_st_write_tensor){.name = s->name, .dtype = s->dtype, .ndim = s->ndim, .data = s->data};
        memcpy(t[i].shape, s->shape, sizeof s->shape);
        if (!strcmp(s->name, tensor)) {
            CHECK(r * (c ? c : 1) == (int64_t)s->numel); /* same bytes, another shape */
            t[i].ndim = c ? 2 : 1;
            t[i].shape[0] = r;
            t[i].shape[1] = c;
        }
    }
    const char *meta[] = {"format", "pt"};
    CHECK(fl_safetensors_write(dst, t, st.n_tensors, meta, 1) == 0);
    free(t);
    fl_safetensors_close(&st);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp tests/fixtures/hf/llama_gqa/model/config.json %s/", dir);
    CHECK_EQ_INT(system(cmd), 0);
    fl_model_config cfg;
    fl_base_weights w;
    CHECK_EQ_INT(fl_weights_load(&w, &cfg, dir, fl_backend_cpu(), (fl_weights_reserve){3 * 8, 2 * 8}), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), expect);
    char train_msg[1024];
    snprintf(train_msg, sizeof train_msg, "%s", fl_last_error());
    snprintf(out, sizeof out, "%s/merged", dir);
    CHECK_EQ_INT(fl_merge_adapter(dir, "tests/fixtures/hf/llama_gqa/adapter", out, 0), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), expect);
    CHECK(!strcmp(fl_last_error(), train_msg));
    CHECK(!fl_file_exists(out));
    rm_rf(dir);
}

/* A base tensor whose shape contradicts config.json (model.norm.weight, not an adapted one) was
 * copied by merge without complaint while train, generate and bench reject the folder. Now merge
 * runs the same check (model/weights.h) and gives the same message. The q/k/v and gate/up members
 * are checked as the files store them (separate HF tensors), not as the fused matrices they are
 * loaded into: merge adds its LoRA product to exactly these tensors. */
TEST(merge_bad_input_base_tensor_shape_contradicts_config) {
    base_shape_case("model.norm.weight", 2, 32, "'model.norm.weight' has shape [2, 32] but config.json implies [64]");
    base_shape_case("model.layers.1.self_attn.k_proj.weight", 64, 32,
                    "'model.layers.1.self_attn.k_proj.weight' has shape [64, 32] but config.json implies [32, 64]");
    base_shape_case("model.layers.0.mlp.up_proj.weight", 64, 112,
                    "'model.layers.0.mlp.up_proj.weight' has shape [64, 112] but config.json implies [112, 64]");
}
