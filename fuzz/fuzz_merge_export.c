/* fuzz_merge_export.c — fuzzes the output side of `merge` (src/infer/merge.c) and `export --gguf`
 * (src/export/): a PEFT adapter of any bytes folded into the llama_gqa fixture model, written as a
 * model folder or a GGUF file. The first input byte sets the options: bit 0 merge (0) or export (1),
 * bit 1 export the adapter alone (--lora-only), bits 2-3 the GGUF type (auto, f32, f16, q8_0). The
 * rest is adapter_config.json, FZ_SEP, adapter_model.safetensors.
 *
 * Checks, whatever the adapter holds: the call succeeds or fails with an input error; a failure
 * leaves no output at all (no folder, no .gguf); a success leaves a complete one (merge: config.json
 * and safetensors whose every tensor is finite; export: a GGUF the validating reader opens); and
 * either way nothing else is left in the output's folder (no staging folder, temporary file or lock
 * file) — the written-whole-or-not-at-all rule of io/output_dir.h and the atomic writer. */
/* fuzz-dict: json safetensors lora */
#include "fuzz.h"

#include <dirent.h>

#include "export/export.h"
#include "export/gguf_reader.h"
#include "infer/merge.h"
#include "io/safetensors.h"

#define FIXTURE_MODEL "tests/fixtures/hf/llama_gqa/model"

/* Every entry of the scratch folder is one of the inputs or the expected output. */
static void check_nothing_else(const char *output_name) {
    DIR *d = opendir(fz_dir());
    if (!d) abort();
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "adapter") || !strcmp(n, output_name)) continue;
        fprintf(stderr, "fuzz: '%s' left beside the output\n", n);
        abort();
    }
    closedir(d);
}

static void check_merged(const char *out) {
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", out);
    if (access(path, R_OK)) { fprintf(stderr, "fuzz: merge succeeded without %s\n", path); abort(); }
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    fl_safetensors st;
    if (fl_safetensors_open(&st, path)) { fprintf(stderr, "fuzz: merged weights: %s\n", fl_last_error()); abort(); }
    for (int i = 0; i < st.n_tensors; i++)
        if (fl_st_check_finite(&st.tensors[i], path)) {
            fprintf(stderr, "fuzz: merge wrote a non-finite weight: %s\n", fl_last_error());
            abort();
        }
    fl_safetensors_close(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const fl_export_type types[4] = {FL_EXPORT_AUTO, FL_EXPORT_F32, FL_EXPORT_F16, FL_EXPORT_Q8_0};
    int export = data[0] & 1, lora_only = data[0] >> 1 & 1;
    fz_part p[2];
    int n = fz_split(data + 1, size - 1, p, 2);
    fz_clear();
    fz_write("adapter/adapter_config.json", p[0].data, p[0].size);
    if (n > 1) fz_write("adapter/adapter_model.safetensors", p[1].data, p[1].size);
    const char *adapter = fz_path("adapter");
    char out[1024];
    snprintf(out, sizeof out, "%s", fz_path(export ? "out.gguf" : "out"));
    fl_clear_error();
    int status;
    if (!export) {
        status = fl_merge_adapter(FIXTURE_MODEL, adapter, out, 0);
    } else {
        fl_export_options o = {.out_path = out, .model_dir = FIXTURE_MODEL, .adapter_dir = adapter,
                               .type = types[data[0] >> 2 & 3], .lora_only = lora_only, .no_tokenizer = 1};
        int n_tensors = 0;
        status = fl_export_gguf(&o, &n_tensors);
    }
    fz_check(status, export ? "fl_export_gguf" : "fl_merge_adapter");
    if (status) {
        if (!access(out, F_OK)) { fprintf(stderr, "fuzz: a failed %s left %s\n", export ? "export" : "merge", out); abort(); }
        check_nothing_else("");
        return 0;
    }
    if (!export) {
        check_merged(out);
    } else {
        fl_gguf_file g;
        if (fl_gguf_open(&g, out)) { fprintf(stderr, "fuzz: exported GGUF: %s\n", fl_last_error()); abort(); }
        fl_gguf_close(&g);
    }
    check_nothing_else(export ? "out.gguf" : "out");
    return 0;
}
