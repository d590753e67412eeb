/* test_cli_args_bad_input.c — every numeric option of every command: inf, nan, overflow, trailing
 * junk, empty strings, hex and out-of-range values are refused with exit status 2 and one line
 * naming the option and what it expects (common/args.h); good spellings give exactly the number typed.
 * (The same ranges in a train --config file: test_train.c, train_bad_input_config_files.) Seeds take
 * any 64-bit unsigned value and survive train_config.json and a checkpoint's trainer_state.json.
 * These run again under ASan/UBSan (`make asan-test`). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/args.h"
#include "cli/commands.h"
#include "common/error.h"
#include "test.h"
#include "train/data.h"
#include "train/options.h"

/* Text no numeric option accepts, whatever its range. */
static const char *const hostile[] = {"inf", "-inf", "nan", "NaN", "infinity", "1e999", "", " 1", "1 ", "0x10",
                                      "0x1p3", "1x", "1e", "--", "1,5", "1_000"};
#define N_HOSTILE (sizeof hostile / sizeof hostile[0])

TEST(cli_args_bad_input_number_syntax) {
    int i32 = 7;
    float f32 = 7;
    double f64 = 7;
    uint64_t u64 = 7;
    const fl_option opts[] = {
        {"n", FL_OPT_INT, &i32, "", FL_NO_RANGE},
        {"x", FL_OPT_FLOAT, &f32, "", FL_NO_RANGE},
        {"lr", FL_OPT_DOUBLE, &f64, "", FL_NO_RANGE},
        {"seed", FL_OPT_U64, &u64, "", FL_NO_RANGE},
    };
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < N_HOSTILE; i++) {
            CHECK_MSG(fl_option_set(&opts[k], hostile[i]) == FL_ERR_INPUT, "--%s '%s' accepted", opts[k].name, hostile[i]);
            char want[64];
            snprintf(want, sizeof want, "--%s: expected ", opts[k].name);
            CHECK_STR_CONTAINS(fl_last_error(), want);
        }
    CHECK(i32 == 7 && f32 == 7 && f64 == 7 && u64 == 7);   /* nothing was stored */
    /* the types' own limits */
    const struct { int k; const char *text; } too_big[] = {
        {0, "2147483648"}, {0, "-2147483649"}, {0, "99999999999999999999999"}, {1, "3.5e38"}, {1, "1e-50"}, {2, "1e-400"}, {3, "-1"},
        {3, "18446744073709551616"},
    };
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++)
        CHECK_MSG(fl_option_set(&opts[too_big[i].k], too_big[i].text) == FL_ERR_INPUT, "'%s' accepted", too_big[i].text);
    /* good spellings: exactly the number typed (a double keeps 0.1 as the double nearest 0.1) */
    CHECK(fl_option_set(&opts[0], "-2147483648") == 0 && i32 == INT32_MIN);
    CHECK(fl_option_set(&opts[0], "+12") == 0 && i32 == 12);
    CHECK(fl_option_set(&opts[1], ".5") == 0 && f32 == 0.5f);
    CHECK(fl_option_set(&opts[1], "2.") == 0 && f32 == 2.0f);
    CHECK(fl_option_set(&opts[2], "0.1") == 0 && f64 == 0.1);
    CHECK(fl_option_set(&opts[2], "2E-4") == 0 && f64 == 2e-4);
    CHECK(fl_option_set(&opts[2], "1e-310") == 0 && f64 == 1e-310);   /* subnormal, not rounded to 0 */
    CHECK(fl_option_set(&opts[3], "18446744073709551615") == 0 && u64 == UINT64_MAX);
    /* ranges and their message */
    const fl_option top_p = {"top-p", FL_OPT_FLOAT, &f32, "", FL_MIN_OPEN | FL_MAX, 0, 1};
    CHECK_EQ_INT(fl_option_set(&top_p, "0"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--top-p: expected a number > 0 and <= 1, got '0'");
    CHECK(fl_option_set(&top_p, "1") == 0 && f32 == 1.0f);
    const fl_option rank = {"rank", FL_OPT_INT, &i32, "", FL_RANGE(1, 4096)};
    CHECK_EQ_INT(fl_option_set(&rank, "4097"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--rank: expected an integer in 1..4096, got '4097'");
    CHECK_EQ_INT(fl_option_check(&rank, 2.5, "cfg.json: rank"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "cfg.json: rank: expected an integer in 1..4096, got 2.5");
    /* the parsers for lists and suffixed sizes */
    double v;
    const char *end;
    CHECK(fl_parse_double("1.5G", &v, &end) == 0 && v == 1.5 && !strcmp(end, "G"));
    CHECK(fl_parse_double("infG", &v, &end) != 0);
    CHECK(fl_parse_double("0x10", &v, NULL) != 0);
    int64_t n;
    CHECK(fl_parse_int64("65536", 1, 65536, &n) == 0 && n == 65536);
    CHECK(fl_parse_int64("65537", 1, 65536, &n) != 0);
}

/* Runs a command in this process with argv built from `line`, stderr captured into err; returns its
 * exit status. Not for train lines that pass the option parser, nor for bench at all: a failing
 * cmd_train past the parser and any failing cmd_bench join the once-a-process agreement of a
 * distributed job (dist/dist.h), whose failure would stay for every later train run of the suite. */
static int run_in_process(int (*cmd)(int, char **), const char *line, char *err, size_t cap) {
    char copy[1024], *argv[64];
    snprintf(copy, sizeof copy, "%s", line);
    int argc = 0;
    for (char *save = NULL, *w = strtok_r(copy, " ", &save); w && argc < 63; w = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(w, "''") ? w : (char *)"";
    argv[argc] = NULL;
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int rc = cmd(argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(err, 1, cap - 1, tmp);
    err[n] = 0;
    fclose(tmp);
    return rc;
}

/* run_in_process on "COMMAND ARGS..." */
static int run_line(const char *line, char *err, size_t cap) {
    static const struct { const char *name; int (*cmd)(int, char **); } commands[] = {
        {"train", cmd_train}, {"generate", cmd_generate}, {"gpus", cmd_gpus},
        {"plan", cmd_plan}, {"board", cmd_board}, {"tokenize", cmd_tokenize}, {"export", cmd_export},
    };
    size_t n = strcspn(line, " ");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strlen(commands[i].name) == n && !strncmp(line, commands[i].name, n))
            return run_in_process(commands[i].cmd, line + n + (line[n] == ' '), err, cap);
    return -1;
}

/* Each command's numeric options, as the command parses them. */
TEST(cli_args_bad_input_every_numeric_option) {
    static const struct { int (*cmd)(int, char **); const char *name, *args, *options; } table[] = {
        {cmd_train, "train", "", "eval-frac seq batch grad-accum epochs max-steps lr warmup warmup-ratio min-lr-ratio "
                                 "weight-decay beta1 beta2 adam-eps clip rank alpha dropout seed eval-every eval-max-rows "
                                 "save-every keep log-every"},
        {cmd_generate, "generate", "--model M --prompt hi ", "max-tokens temperature top-p seed"},
        {cmd_gpus, "gpus", "", "min-vram"},
        {cmd_plan, "plan", "--preset smollm2-135m ", "seq batch rank alpha dropout epochs gpus"},
        {cmd_board, "board", "F ", "batch seq"},
        {cmd_tokenize, "tokenize", "--model M --text hi ", "bench"},
        {cmd_export, "export", "--model M --gguf G ", "alignment"},
    };
    char err[4096];
    for (size_t c = 0; c < sizeof table / sizeof table[0]; c++) {
        char options[512];
        snprintf(options, sizeof options, "%s", table[c].options);
        for (char *save = NULL, *opt = strtok_r(options, " ", &save); opt; opt = strtok_r(NULL, " ", &save))
            for (size_t v = 0; v < N_HOSTILE; v++) {
                if (strchr(hostile[v], ' ')) continue;   /* argv is split at spaces here */
                char line[512];
                snprintf(line, sizeof line, "%s--%s %s", table[c].args, opt, *hostile[v] ? hostile[v] : "''");
                int rc = run_in_process(table[c].cmd, line, err, sizeof err);
                char want[128];
                snprintf(want, sizeof want, "fastlora %s: --%s: expected ", table[c].name, opt);
                const char *nl = strchr(err, '\n');
                CHECK_MSG(rc == 2 && strstr(err, want) && nl && !nl[1], "%s %s: exit %d: %s", table[c].name, line, rc, err);
            }
    }
    char out[4096];
    int rc;
    /* out of each option's own range (a sample of each command) */
    static const char *const out_of_range[] = {
        "train --lr -1", "train --seq 1", "train --batch 65537", "train --grad-accum 0", "train --dropout 1",
        "train --rank 0", "train --alpha 0", "train --clip -0.5", "train --warmup -1", "train --epochs 0",
        "train --beta2 1", "train --seed -1",
        "generate --top-p 0", "generate --top-p 1.01", "generate --temperature -0.1", "generate --max-tokens 0",
        "generate --max-tokens 1048577", "gpus --min-vram -1", "plan --epochs 1e9", "plan --gpus 0", "board --seq 0",
        "export --alignment 65",
    };
    for (size_t i = 0; i < sizeof out_of_range / sizeof out_of_range[0]; i++) {
        rc = run_line(out_of_range[i], out, sizeof out);
        CHECK_MSG(rc == 2 && strstr(out, ": expected ") && strchr(out, '\n') && !strchr(out, '\n')[1], "%s: exit %d: %s",
                  out_of_range[i], rc, out);
    }
    /* shapes whose products would overflow the step's buffers (train's and bench's through the binary,
     * see run_in_process) */
    const char *products[] = {"plan --preset smollm2-135m --batch 65536 --seq 65536",
                              "bench --batch 65536 --seq 65536", "bench --sweep batch=4096 seq=8192",
                              "train --model x --data y --out z --batch 65536 --seq 1048576",
                              "train --model x --data y --out z --batch 1024 --seq 16384 --grad-accum 64"};
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
        int in_process = !strncmp(products[i], "plan", 4);
        if (!in_process && !fl_test_bin()) continue;
        rc = in_process ? run_line(products[i], out, sizeof out) : fl_test_run_cli(out, sizeof out, "%s", products[i]);
        CHECK_MSG(rc == 2 && strstr(out, "positions per"), "%s: exit %d: %s", products[i], rc, out);
    }
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    /* bench's options through the binary (see run_in_process): a sample of the hostile values, the
     * parser being the one tried in full above */
    const char *bench_options[] = {"batch", "seq", "rank", "alpha", "dropout", "steps", "warmup", "threads", "seed"};
    const char *bench_values[] = {"inf", "nan", "0x10", "''", "-1"};
    for (size_t i = 0; i < sizeof bench_options / sizeof bench_options[0]; i++)
        for (size_t v = 0; v < sizeof bench_values / sizeof bench_values[0]; v++) {
            if (!strcmp(bench_options[i], "alpha") && v == 4) continue;   /* -1: covered, alpha > 0 */
            rc = fl_test_run_cli(out, sizeof out, "bench --%s %s", bench_options[i], bench_values[v]);
            char want[128];
            snprintf(want, sizeof want, "fastlora bench: --%s: expected ", bench_options[i]);
            CHECK_MSG(rc == 2 && strstr(out, want) && strchr(out, '\n') && !strchr(out, '\n')[1], "bench --%s %s: exit %d: %s",
                      bench_options[i], bench_values[v], rc, out);
        }
    const char *bench_ranges[] = {"--batch 0", "--seq 1", "--steps 0", "--threads 4097"};
    for (size_t i = 0; i < sizeof bench_ranges / sizeof bench_ranges[0]; i++) {
        rc = fl_test_run_cli(out, sizeof out, "bench %s", bench_ranges[i]);
        CHECK_MSG(rc == 2 && strstr(out, ": expected "), "bench %s: exit %d: %s", bench_ranges[i], rc, out);
    }
    /* the binary, once per command, with a value the shell passes as an empty argument */
    for (size_t c = 0; c < sizeof table / sizeof table[0]; c++) {
        rc = fl_test_run_cli(out, sizeof out, "%s %s--%.*s ''", table[c].name, table[c].args,
                             (int)strcspn(table[c].options, " "), table[c].options);
        CHECK_MSG(rc == 2 && strstr(out, ": expected ") && strchr(out, '\n') && !strchr(out, '\n')[1], "%s: exit %d: %s",
                  table[c].name, rc, out);
    }
    /* a missing value is not the next option */
    rc = fl_test_run_cli(out, sizeof out, "train --out --overwrite --model x --data y");
    CHECK_MSG(rc == 2 && strstr(out, "option '--out' needs a value"), "%s", out);
    /* lists and sizes with suffixes follow the same rules */
    const char *suffixed[] = {"plan --preset smollm2-135m --tokens 0x10", "plan --preset smollm2-135m --tokens inf",
                              "bench --mem-limit infG", "bench --mem-limit 0x1G", "bench --sweep batch=1,,2",
                              "bench --sweep batch=0x4", "tokenize --model tests/fixtures/train/tok --decode 1 0x5",
                              "generate --model tests/fixtures/hf/llama_gqa/model --device cpu --prompt-ids '1 0x5'"};
    for (size_t i = 0; i < sizeof suffixed / sizeof suffixed[0]; i++) {
        rc = fl_test_run_cli(out, sizeof out, "%s", suffixed[i]);
        CHECK_MSG(rc == 2 && strchr(out, '\n') && !strchr(out, '\n')[1], "%s: exit %d: %s", suffixed[i], rc, out);
    }
}

/* Values set in code (a program filling the struct, not a parser) are checked as well; config
 * files: train_bad_input_config_files. */
TEST(cli_args_bad_input_train_options_in_code) {
    const char *names[] = {"--lr", "--clip", "--alpha", "--grad-accum"};
    for (size_t i = 0; i < 4; i++) {
        fl_train_options o;
        fl_train_options_default(&o);
        o.data = "d";
        o.out = "o";
        CHECK_EQ_INT(fl_train_options_validate(&o), 0);
        if (i == 0) o.lr = NAN;
        if (i == 1) o.clip = INFINITY;
        if (i == 2) o.alpha = -INFINITY;
        if (i == 3) o.grad_accum = 0;
        CHECK_EQ_INT(fl_train_options_validate(&o), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), names[i]);
    }
}

/* --seed 2^64 - 1: accepted, written to train_config.json as a string (a JSON integer is signed
 * 64-bit), read back equal; and a run with it checkpoints and resumes. */
TEST(cli_args_seed_takes_any_u64) {
    fl_train_options o;
    fl_train_options_default(&o);
    char *argv[] = {"--seed", "18446744073709551615", "--data", "d", "--out", "o"};
    CHECK_EQ_INT(fl_train_options_parse_args(&o, 6, argv, "usage"), 0);
    CHECK(o.seed == UINT64_MAX);
    char dir[] = "/tmp/fastlora-seed-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/train_config.json", dir);
    CHECK_EQ_INT(fl_train_options_save_json(&o, path), 0);
    fl_train_options back;
    fl_train_options_default(&back);
    CHECK_EQ_INT(fl_train_options_load_json(&back, path), 0);
    CHECK(back.seed == UINT64_MAX);
    fl_train_options_free(&back);
    fl_train_options_free(&o);
    if (fl_test_bin()) {
        /* 2 steps with a checkpoint at 1, then --resume: the checkpoint's seed must read back equal */
        fl_dataset ds = {0};
        int32_t ids[40];
        for (int i = 0; i < 40; i++) ids[i] = 3 + i % 50;
        for (int d = 0; d < 8; d++) fl_dataset_add(&ds, ids + d, NULL, 20);
        char data[128], out[8192];
        snprintf(data, sizeof data, "%s/d.tok", dir);
        CHECK_EQ_INT(fl_tokens_file_write(data, &ds), 0);
        fl_dataset_free(&ds);
        const char *common = "--model tests/fixtures/hf/llama_gqa/model --seq 16 --batch 2 --device cpu --dtype f32 "
                             "--eval-every 0 --log-every 0 --seed 18446744073709551615";
        int rc = fl_test_run_cli(out, sizeof out, "train %s --data %s --out %s/run --max-steps 1", common, data, dir);
        CHECK_MSG(rc == 0, "train: exit %d: %s", rc, out);
        rc = fl_test_run_cli(out, sizeof out, "train %s --data %s --out %s/run --max-steps 2 --resume %s/run", common,
                             data, dir, dir);
        CHECK_MSG(rc == 0 && strstr(out, "resuming from"), "resume: exit %d: %s", rc, out);
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}
