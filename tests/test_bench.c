/* test_bench.c — `fastlora bench` pieces: the FLOP formula against a hand count for two presets,
 * result records round-tripping through JSON, the weights names, and one real (tiny) bench run
 * whose record the board reader accepts; the CPU backends' description of their device and the
 * CPU's identity (vendor, family, model, stepping) that the record carries. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/cpu_isa.h"
#include "bench/records.h"
#include "engine/flops.h"
#include "engine/model.h"
#include "test.h"

/* ---- FLOPs: 4·N_matmul per token + 6·T·NH·HS per layer per token + 6·R·(IC+OC) per adapted
 * projection per layer per token (engine/model.c, docs/BENCHMARKS.md), counted by hand ---- */

TEST(bench_flops_smollm2_135m_hand_count) {
    /* C 576, FF 1536, L 30, NH 9, NKV 3, HS 64, V 49152 (tied head still multiplies) */
    double q = 576.0 * 576, kv = 576.0 * 192, o = 576.0 * 576, mlp = 3.0 * 576 * 1536;
    double per_layer = q + 2 * kv + o + mlp; /* 3,538,944 */
    CHECK_CLOSE(per_layer, 3538944.0, 0, 0);
    double n_matmul = 30 * per_layer + 49152.0 * 576; /* 134,479,872 */
    CHECK_CLOSE(n_matmul, 134479872.0, 0, 0);
    int B = 4, T = 256;
    double tokens = B * T;
    double dense = 4 * n_matmul * tokens;
    double attention = 6.0 * T * 9 * 64 * 30 * tokens;
    /* IC+OC: q 1152, k 768, v 768, o 1152, gate 2112, up 2112, down 2112 = 10176 */
    double lora = 6.0 * 16 * 10176 * 30 * tokens;
    double hand = dense + attention + lora;
    CHECK_CLOSE(hand, 608018890752.0, 0, 0);

    fl_model_config cfg;
    CHECK(fl_config_preset(&cfg, "smollm2-135m") == 0);
    fl_lora_config lc = fl_lora_config_default(); /* r 16, all seven */
    CHECK_CLOSE(fl_model_flops_per_step(&cfg, &lc, B, T), hand, 0, 1e-12);
    /* only q and v adapted: IC+OC = 1152 + 768 */
    CHECK(fl_lora_parse_targets("q,v", &lc.target_mask) == 0);
    CHECK_CLOSE(fl_model_flops_per_step(&cfg, &lc, B, T), dense + attention + 6.0 * 16 * 1920 * 30 * tokens, 0, 1e-12);
}

/* A sliding window (model/config.h): a windowed layer's attention term has W − W²/(2T) mean keys
 * per query instead of T/2 (the exact mean (1/T)·Σ_t min(t+1, W) differs by W/(2T)); a window
 * >= T changes nothing, and only windowed layers shrink. smollm2-135m's shape, W = 64 at T = 256. */
TEST(bench_flops_sliding_window_hand_count) {
    fl_model_config cfg;
    CHECK(fl_config_preset(&cfg, "smollm2-135m") == 0);
    fl_lora_config lc = fl_lora_config_default();
    int B = 2, T = 256, W = 64;
    double tokens = B * T, full = fl_model_flop_terms(&cfg, &lc, B, T).attention;
    CHECK_CLOSE(full, 6.0 * T * 9 * 64 * 30 * tokens, 0, 1e-12);
    cfg.sliding_window = T;
    CHECK_CLOSE(fl_model_flop_terms(&cfg, &lc, B, T).attention, full, 0, 0);
    cfg.sliding_window = W;
    double keys = W - (double)W * W / (2.0 * T); /* 56 */
    CHECK_CLOSE(fl_model_flop_terms(&cfg, &lc, B, T).attention, 12.0 * keys * 9 * 64 * 30 * tokens, 0, 1e-12);
    double exact = 0;
    for (int t = 0; t < T; t++) exact += t + 1 < W ? t + 1 : W;
    CHECK_CLOSE(keys, exact / T, 0, (double)W / (2.0 * T) / keys + 1e-12);
    cfg.window_global_every = 2; /* half the layers global */
    CHECK_CLOSE(fl_model_flop_terms(&cfg, &lc, B, T).attention, 12.0 * (keys + T / 2.0) * 15 * 9 * 64 * tokens, 0, 1e-12);
}

TEST(bench_flops_qwen25_7b_hand_count) {
    /* C 3584, FF 18944, L 28, NH 28, NKV 4, HS 128, V 152064, untied head; q/k/v biases are not matmuls */
    double q = 3584.0 * 3584, kv = 3584.0 * 512, o = 3584.0 * 3584, mlp = 3.0 * 3584 * 18944;
    double per_layer = q + 2 * kv + o + mlp; /* 233,046,016 */
    CHECK_CLOSE(per_layer, 233046016.0, 0, 0);
    double n_matmul = 28 * per_layer + 152064.0 * 3584; /* 7,070,285,824 */
    CHECK_CLOSE(n_matmul, 7070285824.0, 0, 0);
    int B = 4, T = 2048;
    double tokens = B * T;
    /* IC+OC: q 7168, k 4096, v 4096, o 7168, gate/up/down 22528 each = 90112 */
    double hand = 4 * n_matmul * tokens + 6.0 * T * 28 * 128 * 28 * tokens + 6.0 * 16 * 90112 * 28 * tokens;
    fl_model_config cfg;
    CHECK(fl_config_preset(&cfg, "qwen2.5-7b") == 0);
    fl_lora_config lc = fl_lora_config_default();
    CHECK_CLOSE(fl_model_flops_per_step(&cfg, &lc, B, T), hand, 0, 1e-12);
    /* about 4N per token dominates: within 25% of 4·N_matmul·tokens at T = 2048 */
    CHECK(hand > 4 * n_matmul * tokens && hand < 1.25 * 4 * n_matmul * tokens);
}

/* ---- records ---- */

static fl_bench_record sample_record(void) {
    fl_bench_record r;
    fl_bench_record_clear(&r);
    snprintf(r.tool, sizeof r.tool, "fastlora");
    snprintf(r.version, sizeof r.version, "b22c695-dirty");
    snprintf(r.weights, sizeof r.weights, "Qwen/Qwen2.5-7B");
    snprintf(r.device, sizeof r.device, "NVIDIA H200");
    snprintf(r.device_kind, sizeof r.device_kind, "cuda");
    snprintf(r.dtype, sizeof r.dtype, "bfloat16");
    snprintf(r.date, sizeof r.date, "2026-01-02T03:04:05Z");
    r.batch = 4;
    r.seq = 2048;
    r.rank = 16;
    r.threads = 3;
    r.steps = 5;
    r.warmup = 2;
    r.train_tok_s = 8855.4321;
    r.train_tok_s_min = 8800.25;
    r.train_tok_s_max = 8900.5;
    r.ms_per_step = 925.125;
    r.peak_mem_bytes = 123456789012.0;
    r.mfu = 0.4125;
    r.interrupted = 1;
    return r;
}

TEST(bench_record_json_round_trip) {
    fl_bench_record r = sample_record();
    json_t *j = fl_bench_record_to_json(&r);
    json_object_set_new(j, "extra_key", json_string("ignored by readers"));
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    CHECK(text && !strchr(text, '\n'));
    fl_bench_record back;
    CHECK_EQ_INT(fl_bench_record_parse_line(&back, text, strlen(text), "mem.jsonl", 7), 0);
    free(text);
    CHECK(!strcmp(back.tool, r.tool) && !strcmp(back.version, r.version) && !strcmp(back.weights, r.weights));
    CHECK(!strcmp(back.device, r.device) && !strcmp(back.device_kind, r.device_kind) && !strcmp(back.dtype, r.dtype));
    CHECK(!strcmp(back.date, r.date) && !strcmp(back.file, "mem.jsonl"));
    CHECK_EQ_INT(back.line, 7);
    CHECK_EQ_INT(back.batch, 4);
    CHECK_EQ_INT(back.seq, 2048);
    CHECK_EQ_INT(back.rank, 16);
    CHECK_EQ_INT(back.threads, 3);
    CHECK_EQ_INT(back.steps, 5);
    CHECK_EQ_INT(back.warmup, 2);
    CHECK_EQ_INT(back.interrupted, 1);
    /* jansson prints doubles with 17 significant digits: exact */
    CHECK(back.train_tok_s == r.train_tok_s && back.train_tok_s_min == r.train_tok_s_min);
    CHECK(back.train_tok_s_max == r.train_tok_s_max && back.ms_per_step == r.ms_per_step);
    CHECK(back.peak_mem_bytes == r.peak_mem_bytes && back.mfu == r.mfu);

    /* optional fields absent stay absent */
    fl_bench_record bare;
    fl_bench_record_clear(&bare);
    snprintf(bare.tool, sizeof bare.tool, "pytorch+peft");
    snprintf(bare.weights, sizeof bare.weights, "w");
    snprintf(bare.device, sizeof bare.device, "cpu");
    snprintf(bare.dtype, sizeof bare.dtype, "float32");
    snprintf(bare.date, sizeof bare.date, "2026");
    bare.batch = bare.seq = bare.rank = 1;
    bare.train_tok_s = 1.5;
    j = fl_bench_record_to_json(&bare);
    CHECK(json_object_get(j, "mfu") == NULL && json_object_get(j, "threads") == NULL);
    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    CHECK_EQ_INT(fl_bench_record_parse_line(&back, text, strlen(text), "x", 1), 0);
    free(text);
    CHECK(back.mfu < 0 && back.threads == 0 && back.train_tok_s_min == 0 && !back.interrupted && !back.version[0]);
    /* blank lines are not records */
    CHECK_EQ_INT(fl_bench_record_parse_line(&back, "  \n", 3, "x", 2), -1);
}

TEST(bench_record_append_and_read) {
    char path[] = "/tmp/fastlora_test_records_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    fl_bench_record r = sample_record();
    json_t *j = fl_bench_record_to_json(&r);
    CHECK_EQ_INT(fl_bench_record_append(path, j), 0);
    CHECK_EQ_INT(fl_bench_record_append(path, j), 0);
    json_decref(j);
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(path, &list, NULL), 0);
    CHECK_EQ_INT(list.n, 2);
    if (list.n == 2) CHECK_EQ_INT(list.items[1].line, 2);
    fl_bench_record_list_free(&list);
    unlink(path);
}

TEST(bench_weights_names) {
    char w[128];
    fl_bench_weights_name("smollm2-135m", 1, w, sizeof w);
    CHECK(!strcmp(w, "HuggingFaceTB/SmolLM2-135M"));
    fl_bench_weights_name("not-a-preset", 1, w, sizeof w); /* kept as given */
    CHECK(!strcmp(w, "not-a-preset"));
    fl_bench_weights_name("tinyllama-1.1b", 1, w, sizeof w);
    CHECK(!strcmp(w, "TinyLlama/TinyLlama-1.1B-Chat-v1.0"));
    fl_bench_weights_name("../shared/models/SmolLM2-135M/", 0, w, sizeof w);
    CHECK(!strcmp(w, "HuggingFaceTB/SmolLM2-135M"));
    fl_bench_weights_name("/x/my-finetune", 0, w, sizeof w);
    CHECK(!strcmp(w, "my-finetune"));
    char v[32];
    fl_bench_format_tok_s(15322.0, v, sizeof v);
    CHECK(!strcmp(v, "15322"));
    fl_bench_format_tok_s(14931.66, v, sizeof v);
    CHECK(!strcmp(v, "14931.7"));
    fl_bench_format_tok_s(0.04, v, sizeof v);
    CHECK(!strcmp(v, "0"));
}

/* A real run, as small as it gets: the record it appends is one the board reads. */
/* describe without measuring is cheap and names the peak it could measure; the CPU counts nothing */
TEST(bench_cpu_backends_describe_their_device) {
    const fl_backend *backends[2] = {fl_backend_cpu(), fl_backend_cpu_bf16()};
    for (int i = 0; i < 2; i++) {
        fl_device_info dev;
        backends[i]->describe(&dev, 0);
        CHECK(dev.name[0] && dev.compute_capability == 0 && dev.mem_total == 0);
        CHECK(strstr(dev.peak_method, "sgemm") != NULL && dev.peak_tflops == 0 && !dev.peak_source[0]);
        fl_device_counters counters = {.peak_bytes = 1, .ops = 1};
        backends[i]->read_counters(&counters, 1);
        CHECK(counters.peak_bytes == 0 && counters.ops == 0);
    }
}

/* The value of "key : value" in the first processor block of /proc/cpuinfo text, or "" — read by
 * scanning whole lines here, apart from fl_cpu_identity's reader. */
static void cpuinfo_value(const char *text, const char *key, char *out, size_t cap) {
    out[0] = 0;
    for (const char *line = text; *line && *line != '\n';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line), klen = strlen(key);
        if (len > klen && !strncmp(line, key, klen) && strspn(line + klen, " \t") + klen < len &&
            line[klen + strspn(line + klen, " \t")] == ':') {
            const char *v = line + klen + strspn(line + klen, " \t") + 1;
            v += strspn(v, " \t");
            snprintf(out, cap, "%.*s", (int)(line + len - v), v);
            return;
        }
        if (!end) break;
        line = end + 1;
    }
}

/* fl_cpu_identity names the first processor's vendor, family, model and stepping as /proc/cpuinfo
 * has them ("model" is not "model name"), or "" where there is no such file or field */
TEST(bench_cpu_identity_from_proc_cpuinfo) {
    char id[160];
    fl_cpu_identity(id, sizeof id);
    FILE *f = fopen("/proc/cpuinfo", "r");
    static char text[1 << 16];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    char vendor[64], family[64], model[64], stepping[64], want[300] = "";
    cpuinfo_value(text, "vendor_id", vendor, sizeof vendor);
    cpuinfo_value(text, "cpu family", family, sizeof family);
    cpuinfo_value(text, "model", model, sizeof model);
    cpuinfo_value(text, "stepping", stepping, sizeof stepping);
    if (vendor[0] && family[0] && model[0] && stepping[0])
        snprintf(want, sizeof want, "%s family %s model %s stepping %s", vendor, family, model, stepping);
    printf("    cpu: %s\n", id[0] ? id : "(none: no x86 /proc/cpuinfo fields)");
    CHECK_MSG(!strcmp(id, want), "fl_cpu_identity '%s', /proc/cpuinfo says '%s'", id, want);
    char tiny[8];
    fl_cpu_identity(tiny, sizeof tiny); /* truncated, still terminated */
    CHECK(strlen(tiny) < sizeof tiny);
}

TEST(bench_cli_tiny_run_writes_a_record) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char path[] = "/tmp/fastlora_test_bench_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s bench --preset smollm2-135m --device cpu --dtype f32 --batch 1 --seq 8 --rank 2 --steps 2 --warmup 1 "
             "--threads 1 --no-sgemm --json %s > %s.out 2>&1",
             bin, path, path);
    CHECK_EQ_INT(system(cmd), 0);
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(path, &list, stdout), 0);
    CHECK_EQ_INT(list.n, 1);
    if (list.n == 1) {
        const fl_bench_record *r = &list.items[0];
        CHECK(!strcmp(r->tool, "fastlora") && !strcmp(r->weights, "HuggingFaceTB/SmolLM2-135M"));
        CHECK(!strcmp(r->device_kind, "cpu") && !strcmp(r->dtype, "float32"));
        CHECK(r->batch == 1 && r->seq == 8 && r->rank == 2 && r->steps == 2 && r->warmup == 1 && r->threads == 1);
        CHECK(r->train_tok_s > 0 && r->train_tok_s_min <= r->train_tok_s && r->train_tok_s <= r->train_tok_s_max);
        CHECK(r->version[0] && r->peak_mem_bytes > 0);
    }
    fl_bench_record_list_free(&list);
    /* the printed result carries the definition and the FLOP formula */
    char out_path[600];
    snprintf(out_path, sizeof out_path, "%s.out", path);
    FILE *f = fopen(out_path, "r");
    char buf[16384] = "";
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    CHECK_STR_CONTAINS(buf, "definition (fastlora-bench-1");
    CHECK_STR_CONTAINS(buf, "train tok/s");
    CHECK_STR_CONTAINS(buf, "6·R·(IC+OC)");
    CHECK_STR_CONTAINS(buf, "warming up");
    /* the silicon and the kernel level, printed and recorded */
    char id[160], line[256];
    fl_cpu_identity(id, sizeof id);
    snprintf(line, sizeof line, "  cpu: %s; kernels %s", id[0] ? id : "unknown", fl_cpu_isa_name(fl_cpu_isa_active()));
    CHECK_STR_CONTAINS(buf, line);
    json_error_t jerr;
    json_t *rec = json_load_file(path, JSON_DISABLE_EOF_CHECK, &jerr);
    CHECK(rec != NULL);
    if (rec) {
        const char *kernels = json_string_value(json_object_get(rec, "cpu_kernels"));
        CHECK(kernels && !strcmp(kernels, fl_cpu_isa_name(fl_cpu_isa_active())));
        const char *rec_id = json_string_value(json_object_get(rec, "cpu_id"));
        CHECK(id[0] ? rec_id && !strcmp(rec_id, id) : rec_id == NULL);
        json_decref(rec);
    }
    unlink(out_path);
    unlink(path);
}

/* Bad options are one-line errors with exit status 2. */
TEST(bench_cli_bad_input_options) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    const char *bad[] = {
        "--sweep batch=0,2", "--sweep", "--sweep size=4", "--sweep batch=1,x", "--mem-limit lots",
        "--preset nope", "--batch 0", "--dtype fp8", "--preset smollm2-135m --model /nonexistent",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s bench --device cpu --no-sgemm %s > /dev/null 2>&1", bin, bad[i]);
        int rc = system(cmd);
        CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "bench %s: exit %d, expected 2", bad[i], WEXITSTATUS(rc));
    }
    /* a setting that cannot fit the limit is refused before anything is allocated */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s bench --device cpu --no-sgemm --preset qwen2.5-7b --mem-limit 1G > /dev/null 2>&1", bin);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
}
