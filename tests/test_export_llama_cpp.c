/* test_export_llama_cpp.c — the GGUF export against llama.cpp itself.
 *
 * tools/llama_cpp_check.py (llama.cpp through the pinned llama-cpp-python) compares llama.cpp's
 * logits on our base + LoRA GGUFs and on our merged GGUFs with fastlora's, llama.cpp's tokenizer on
 * our GGUFs with transformers' ids, and the chat template rendered from our GGUF with transformers';
 * it records the results, and the sha256 of the files it checked, in
 * tests/fixtures/gguf/llama_cpp_check.json.
 *   - export_llama_cpp_check runs that script when the binding is installed (the venv that
 *     `tools/llama_cpp_check.py --setup` builds, FASTLORA_LLAMA_CPP_PYTHON, or python3's own), and
 *     skips otherwise;
 *   - export_files_llama_cpp_verified runs everywhere: it exports the same models again and checks
 *     the files are byte-identical to the ones llama.cpp accepted — so a change to the writer shows
 *     up here, and the check must be run again to re-verify it.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "export/export.h"
#include "io/file_util.h"
#include "test.h"
#include "train/llama2c.h"

#define RESULTS "tests/fixtures/gguf/llama_cpp_check.json"

static int sha256_file(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) EVP_DigestUpdate(ctx, buf, n);
    unsigned char md[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

static void rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

TEST(export_files_llama_cpp_verified) {
    json_error_t err;
    json_t *root = json_load_file(RESULTS, JSON_ALLOW_NUL, &err);
    CHECK_MSG(root != NULL, "%s: %s", RESULTS, err.text);
    if (!root) return;
    CHECK(json_is_true(json_object_get(root, "ok")));
    char dir[] = "/tmp/fastlora-llamacpp-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char stories[128] = "";
    const char *shared = fl_test_shared_dir();
    json_t *files = json_object_get(root, "files");
    size_t i, checked = 0, skipped = 0;
    json_t *e;
    json_array_foreach(files, i, e) {
        const char *model = json_string_value(json_object_get(e, "model"));
        const char *adapter = json_string_value(json_object_get(e, "adapter"));
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *want = json_string_value(json_object_get(e, "sha256"));
        CHECK(model && type && want);
        if (!model || !type || !want) continue;
        if (!strcmp(model, "@stories260K")) {
            if (!shared) { skipped++; continue; }
            if (!stories[0]) { /* the same folder name as the check used: general.name is its last component */
                char ckpt[512], tok[512];
                snprintf(stories, sizeof stories, "%s/stories260K", dir);
                snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
                snprintf(tok, sizeof tok, "%s/data/stories260K/tok512.bin", shared);
                CHECK(fl_llama2c_convert(ckpt, tok, stories, 0) == 0);
            }
            model = stories;
        }
        fl_export_options o = {.model_dir = model, .adapter_dir = adapter, .force = 1,
                               .lora_only = json_is_true(json_object_get(e, "lora_only")),
                               .no_tokenizer = json_is_true(json_object_get(e, "no_tokenizer"))};
        char out[160], got[65];
        snprintf(out, sizeof out, "%s/f.gguf", dir);
        o.out_path = out;
        CHECK(fl_export_parse_type(type, &o.type) == 0);
        int rc = fl_export_gguf(&o, NULL);
        CHECK_MSG(rc == 0, "%s: %s", model, fl_last_error());
        if (rc) continue;
        CHECK(sha256_file(out, got) == 0);
        CHECK_MSG(!strcmp(got, want), "%s%s%s %s%s: the file differs from the one llama.cpp verified (rerun tools/llama_cpp_check.py)",
                  model, adapter ? " + " : "", adapter ? adapter : "", type, o.lora_only ? " LoRA" : "");
        checked++;
    }
    printf("    %zu files identical to the llama.cpp-verified ones%s\n", checked, skipped ? " (stories260K: ../shared absent)" : "");
    CHECK(checked > 0);
    rm_rf(dir);
    json_decref(root);
}

/* A python that imports llama_cpp and everything tools/llama_cpp_check.py reads with (numpy,
 * safetensors, gguf-py, tokenizers, transformers), or NULL. */
static const char *llama_cpp_python(void) {
    static char py[512];
    const char *env = getenv("FASTLORA_LLAMA_CPP_PYTHON");
    const char *home = getenv("HOME");
    const char *candidates[3] = {env, NULL, "python3"};
    char venv[400] = "";
    if (home) snprintf(venv, sizeof venv, "%s/.cache/fastlora/llama-cpp-venv/bin/python", home);
    candidates[1] = venv[0] ? venv : NULL;
    for (int i = 0; i < 3; i++) {
        if (!candidates[i] || (i < 2 && access(candidates[i], X_OK) != 0)) continue;
        char cmd[600];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import llama_cpp, numpy, safetensors, gguf, tokenizers, transformers' >/dev/null 2>&1",
                 candidates[i]);
        if (system(cmd) == 0) {
            snprintf(py, sizeof py, "%s", candidates[i]);
            return py;
        }
    }
    return NULL;
}

TEST(export_llama_cpp_check) {
    const char *py = llama_cpp_python();
    if (!py) SKIP("llama-cpp-python with numpy, safetensors, gguf, tokenizers, transformers not installed "
                  "(python3 tools/llama_cpp_check.py --setup builds it)");
    const char *bin = getenv("FASTLORA_BIN") ? getenv("FASTLORA_BIN") : "build/fastlora";
    char out[128], cmd[1024];
    snprintf(out, sizeof out, "/tmp/fastlora-llamacpp-%d.json", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' tools/llama_cpp_check.py --fastlora '%s' --out '%s' > '%s.log' 2>&1", py, bin, out, out);
    int rc = system(cmd);
    int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    char log[160];
    snprintf(log, sizeof log, "%s.log", out);
    if (status) {
        snprintf(cmd, sizeof cmd, "tail -25 '%s'", log);
        if (system(cmd) != 0) fprintf(stderr, "no log\n");
    }
    CHECK_EQ_INT(status, 0);
    json_error_t jerr;   /* the report quotes the hostile strings, U+0000 among them */
    json_t *root = json_load_file(out, JSON_ALLOW_NUL, &jerr);
    if (!root) fprintf(stderr, "    %s: %s (line %d)\n", out, jerr.text, jerr.line);
    CHECK(root && json_is_true(json_object_get(root, "ok")));
    json_t *logits = root ? json_object_get(root, "logits") : NULL;
    printf("    llama.cpp agrees on %zu logit comparisons, %zu tokenizers, %zu chat templates\n", json_array_size(logits),
           root ? json_array_size(json_object_get(root, "tokenizer")) : 0,
           root ? json_array_size(json_object_get(root, "chat_template")) : 0);
    json_decref(root);
    unlink(out);
    unlink(log);
}
