/* fuzz_model_weights.c — fuzzes loading a model folder's weights (src/model/weights.c): config.json
 * plus model.safetensors, or a sharded model.safetensors.index.json whose weight_map names the
 * shards. The input is files separated by FZ_SEP: config.json, then either model.safetensors or
 * (when the part starts with '{') the index, then the shards shard-1.safetensors,
 * shard-2.safetensors, ... An EMPTY config.json or model.safetensors part stands for the file of
 * tests/fixtures/hf/llama_gqa/model. Every shape is checked against config.json before anything is
 * allocated; a failure must be an input error. Odd-sized inputs load into the bf16 CPU backend
 * (conversion to bf16), even-sized ones into the f32 one. With FZ_SEEDS_OUT set it writes the
 * fixture models as seeds (one of them sharded) and exits.
 */
/* fuzz-dict: json safetensors config lora */
#include "fuzz.h"

#include <jansson.h>

#include "io/safetensors.h"
#include "model/weights.h"

static uint8_t *fixture[2];
static size_t fixture_size[2];

/* Seeds: each fixture model whole, and llama_gqa split into two shards with an index. */
static void write_seeds(void) {
    static const char *models[] = {"llama_gqa", "qwen2_bias_tied", "llama3_rope"};
    for (int m = 0; m < 3; m++) {
        char path[256];
        fz_part p[2];
        snprintf(path, sizeof path, "tests/fixtures/hf/%s/model/config.json", models[m]);
        p[0].data = fz_slurp(path, &p[0].size);
        snprintf(path, sizeof path, "tests/fixtures/hf/%s/model/model.safetensors", models[m]);
        p[1].data = fz_slurp(path, &p[1].size);
        fz_write_seed(models[m], p, 2);
        free((void *)p[0].data);
        free((void *)p[1].data);
    }
    fl_safetensors st;
    if (fl_safetensors_open(&st, "tests/fixtures/hf/llama_gqa/model/model.safetensors")) abort();
    fl_st_write_tensor *w = calloc((size_t)st.n_tensors, sizeof *w);
    json_t *map = json_object();
    int half = st.n_tensors / 2;
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *t = &st.tensors[i];
        w[i] = (fl_st_write_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = t->data};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
        json_object_set_new(map, t->name, json_string(i < half ? "shard-1.safetensors" : "shard-2.safetensors"));
    }
    json_t *index = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", map);
    char *text = json_dumps(index, JSON_INDENT(2));
    json_decref(index);
    fz_part p[4] = {{NULL, 0}, {(const uint8_t *)text, strlen(text)}};
    if (fl_safetensors_write(fz_path("a"), w, half, NULL, 0) ||
        fl_safetensors_write(fz_path("b"), w + half, st.n_tensors - half, NULL, 0))
        abort();
    p[2].data = fz_slurp(fz_path("a"), &p[2].size);
    p[3].data = fz_slurp(fz_path("b"), &p[3].size);
    fz_write_seed("llama_gqa-sharded", p, 4);
    free((void *)p[2].data);
    free((void *)p[3].data);
    free(text);
    free(w);
    fl_safetensors_close(&st);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fixture[0] = fz_slurp("tests/fixtures/hf/llama_gqa/model/config.json", &fixture_size[0]);
    fixture[1] = fz_slurp("tests/fixtures/hf/llama_gqa/model/model.safetensors", &fixture_size[1]);
    if (fz_seeds_out()) {
        write_seeds();
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[8];
    int n = fz_split(data, size, p, 8);
    fz_clear();
    for (int i = 0; i < 2; i++) {
        int given = i < n && p[i].size > 0;
        const uint8_t *d = given ? p[i].data : fixture[i];
        size_t s = given ? p[i].size : fixture_size[i];
        const char *name = i == 0 ? "model/config.json" : d[0] == '{' ? "model/model.safetensors.index.json"
                                                                          : "model/model.safetensors";
        fz_write(name, d, s);
    }
    for (int i = 2; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "model/shard-%d.safetensors", i - 1);
        fz_write(name, p[i].data, p[i].size);
    }
    fl_base_weights w;
    fl_model_config cfg;
    fl_clear_error();
    int status = fl_weights_load(&w, &cfg, fz_path("model"), size & 1 ? fl_backend_cpu_bf16() : fl_backend_cpu(),
                                 (fl_weights_reserve){0, 0});
    fz_check(status, "fl_weights_load");
    if (!status) fl_weights_free(&w);
    return 0;
}
