/* fuzz_adapter.c — fuzzes PEFT adapter folders (src/lora/adapter_io.c): adapter_config.json and
 * adapter_model.safetensors, checked against a model's config.json. The input is up to three files
 * separated by FZ_SEP: adapter_config.json, adapter_model.safetensors, and optionally the model's
 * config.json (else tests/fixtures/hf/llama_gqa/model/config.json). Failures must be input errors;
 * an adapter that loads is saved with fl_adapter_save and loaded again: the same LoRA config and
 * bit-identical parameters.
 */
/* fuzz-dict: json safetensors lora config */
#include "fuzz.h"

#include "lora/adapter_io.h"
#include "lora/lora.h"
#include "model/config.h"

static fl_model_config fixture_cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (fl_config_load(&fixture_cfg, "tests/fixtures/hf/llama_gqa/model/config.json")) {
        fprintf(stderr, "fuzz: %s (run from the project root)\n", fl_last_error());
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[3];
    int n = fz_split(data, size, p, 3);
    fz_clear();
    fz_write("adapter/adapter_config.json", p[0].data, p[0].size);
    if (n > 1) fz_write("adapter/adapter_model.safetensors", p[1].data, p[1].size);
    fl_model_config cfg = fixture_cfg;
    int status;
    if (n > 2) {
        fl_clear_error();
        status = fl_config_load(&cfg, fz_write("config.json", p[2].data, p[2].size));
        fz_check(status, "fl_config_load");
        if (status) return 0;
    }
    const char *dir = fz_path("adapter");
    fl_lora_config lc;
    fl_clear_error();
    status = fl_adapter_load_config(dir, &lc);
    fz_check(status, "fl_adapter_load_config");
    if (status) return 0;
    if (lc.rank < 1 || !(lc.alpha > 0) || !(lc.dropout >= 0 && lc.dropout < 1) || !lc.target_mask) abort();
    fl_clear_error();
    status = fl_adapter_check_weights(dir, &cfg, &lc);
    fz_check(status, "fl_adapter_check_weights");
    if (status) return 0;
    fl_lora_buffer a, b;
    fl_lora_buffer_init(&a, &cfg, &lc, fl_backend_cpu());
    fl_clear_error();
    if (fl_adapter_load_weights(dir, &a, &cfg, &lc)) {
        fprintf(stderr, "fuzz: checked weights did not load: %s\n", fl_last_error());
        abort();
    }
    const char *copy = fz_path("copy");
    if (fl_adapter_save(copy, &a, &cfg, &lc, "fuzz/base")) { fprintf(stderr, "fuzz: save: %s\n", fl_last_error()); abort(); }
    fl_lora_config lc2;
    if (fl_adapter_load_config(copy, &lc2)) { fprintf(stderr, "fuzz: reload: %s\n", fl_last_error()); abort(); }
    if (lc2.rank != lc.rank || lc2.alpha != lc.alpha || lc2.use_rslora != lc.use_rslora || lc2.dropout != lc.dropout ||
        lc2.target_mask != lc.target_mask) {
        fprintf(stderr, "fuzz: the saved adapter_config.json reads back differently\n");
        abort();
    }
    fl_lora_buffer_init(&b, &cfg, &lc2, fl_backend_cpu());
    if (fl_adapter_load_weights(copy, &b, &cfg, &lc2)) { fprintf(stderr, "fuzz: reload: %s\n", fl_last_error()); abort(); }
    if (a.n != b.n || memcmp(a.data, b.data, a.n * sizeof(float))) {
        fprintf(stderr, "fuzz: the saved adapter weights read back differently\n");
        abort();
    }
    fl_lora_buffer_free(&a);
    fl_lora_buffer_free(&b);
    return 0;
}
