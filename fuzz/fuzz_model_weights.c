/* fuzz_model_weights.c — fuzzes loading a model folder's weights (src/model/weights.c): config.json
 * plus model.safetensors, or a sharded model.safetensors.index.json whose weight_map names the
 * shards. The input is files separated by FZ_SEP: config.json, then either model.safetensors or
 * (when the part starts with '{') the index, then the shards shard-1.safetensors,
 * shard-2.safetensors, ... An EMPTY config.json or model.safetensors part stands for the file of
 * tests/fixtures/hf/llama_gqa/model. Every shape is checked against config.json before anything is
 * allocated; a failure must be an input error. Odd-sized inputs load into the bf16 CPU backend
 * (conversion to bf16), even-sized ones into the f32 one.
 */
#include "fuzz.h"

#include "model/weights.h"

static uint8_t *fixture[2];
static size_t fixture_size[2];

static void slurp(const char *path, uint8_t **out, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); abort(); }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    *out = malloc(*size + 1);
    if (fread(*out, 1, *size, f) != *size) abort();
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    slurp("tests/fixtures/hf/llama_gqa/model/config.json", &fixture[0], &fixture_size[0]);
    slurp("tests/fixtures/hf/llama_gqa/model/model.safetensors", &fixture[1], &fixture_size[1]);
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
    int status = fl_weights_load(&w, &cfg, fz_path("model"), size & 1 ? fl_backend_cpu_bf16() : fl_backend_cpu());
    fz_check(status, "fl_weights_load");
    if (!status) fl_weights_free(&w);
    return 0;
}
