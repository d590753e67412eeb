/* test_board_bad_input.c — bad result records and bad reference boards are "file:line: field:
 * expected ..." errors, every bad line is reported, nothing is rendered; never a crash (these run
 * again under ASan/UBSan via `make asan-test`). */
#include <stdlib.h>
#include <unistd.h>

#include "bench/board.h"
#include "common/error.h"
#include "test.h"

#define FIX "tests/fixtures/board/"

TEST(board_bad_input_records_name_file_line_field) {
    char *errs = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&errs, &len);
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(FIX "bad.jsonl", &list, err), FL_ERR_INPUT);
    fclose(err);
    CHECK_EQ_INT(list.n, 1); /* line 1 is good */
    const char *want[] = {
        FIX "bad.jsonl:2: train_tok_s: expected a number > 0, got \"fast\"\n",
        FIX "bad.jsonl:3: weights: expected a non-empty string, got nothing (the key is missing)\n",
        FIX "bad.jsonl:4: batch: expected an integer >= 1, got 0\n",
        FIX "bad.jsonl:5: record: expected one JSON object per line (",
        FIX "bad.jsonl:6: record: expected a JSON object, got [1,2,3]\n",
        FIX "bad.jsonl:7: train_tok_s: expected a number > 0, got -5\n",
        FIX "bad.jsonl:8: threads: expected an integer >= 0, got \"two\"\n",
        FIX "bad.jsonl:9: interrupted: expected true or false, got \"no\"\n",
        FIX "bad.jsonl:10: tool: expected a non-empty string, got \"\"\n",
        FIX "bad.jsonl:11: record: expected one JSON object per line (",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK_STR_CONTAINS(errs, want[i]);
    int lines = 0;
    for (const char *p = errs; p && *p; p++) lines += *p == '\n';
    CHECK_EQ_INT(lines, 10);
    /* the returned error names the first bad line and how many more */
    CHECK_STR_CONTAINS(fl_last_error(), "bad.jsonl:2: train_tok_s");
    CHECK_STR_CONTAINS(fl_last_error(), "and 9 more bad records");
    free(errs);
    fl_bench_record_list_free(&list);

    /* a missing file */
    CHECK_EQ_INT(fl_bench_records_read(FIX "no-such.jsonl", &list, NULL), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "cannot read " FIX "no-such.jsonl: No such file or directory");

    /* single lines: overlong strings, wrong types, NaN-free numbers */
    fl_bench_record r;
    char line[600];
    memset(line, 0, sizeof line);
    snprintf(line, sizeof line, "{\"tool\":\"%0200d\"}", 0);
    CHECK_EQ_INT(fl_bench_record_parse_line(&r, line, strlen(line), "l", 1), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "l:1: tool: expected a string of at most 63 bytes");
    const char *more[][2] = {
        {"{\"tool\":\"t\",\"weights\":\"w\",\"device\":\"d\",\"dtype\":\"f\",\"batch\":1.5}", "batch: expected an integer >= 1, got 1.5"},
        {"{\"tool\":\"t\",\"weights\":\"w\",\"device\":\"d\",\"dtype\":7}", "dtype: expected a non-empty string, got 7"},
        {"{\"tool\":\"t\",\"weights\":\"w\",\"device\":\"d\",\"dtype\":\"f\",\"batch\":1,\"seq\":9,\"rank\":1,"
         "\"train_tok_s\":1,\"mfu\":\"high\",\"date\":\"d\"}", "mfu: expected a number >= 0, got \"high\""},
        {"{\"tool\":\"t\",\"weights\":\"w\",\"device\":\"d\",\"dtype\":\"f\",\"batch\":1,\"seq\":9,\"rank\":1,"
         "\"train_tok_s\":1}", "date: expected a non-empty string, got nothing"},
        {"{\"tool\":\"t\",\"tool\":\"u\"}", "record: expected one JSON object per line"},
        {"\"just a string\"", "record: expected a JSON object, got \"just a string\""},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        CHECK_EQ_INT(fl_bench_record_parse_line(&r, more[i][0], strlen(more[i][0]), "l", 3), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), more[i][1]);
        CHECK_STR_CONTAINS(fl_last_error(), "l:3: ");
    }
}

TEST(board_bad_input_reference_csv) {
    fl_reference_board ref;
    CHECK_EQ_INT(fl_reference_board_load(&ref, FIX "bad-reference.csv"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "bad-reference.csv:2: train_tok_s: expected a number > 0, got 'lots'");
    CHECK_EQ_INT(fl_reference_board_load(&ref, FIX "mixed.jsonl"), FL_ERR_INPUT); /* not a CSV */
    CHECK_STR_CONTAINS(fl_last_error(), "mixed.jsonl:1: header: expected 'model,gpu,train_tok_s'");
    CHECK_EQ_INT(fl_reference_board_load(&ref, FIX "no-such.csv"), FL_ERR_INPUT);
}

TEST(board_cli_bad_input_renders_nothing) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char path[] = "/tmp/fastlora_test_board_bad_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s board " FIX "mixed.jsonl " FIX "bad.jsonl > %s 2>&1", bin, path);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    FILE *f = fopen(path, "r");
    char buf[8192] = "";
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    CHECK_STR_CONTAINS(buf, FIX "bad.jsonl:4: batch: expected an integer >= 1, got 0");
    CHECK_STR_CONTAINS(buf, "fastlora: board: bad result records in " FIX "bad.jsonl (above); nothing rendered");
    CHECK(!strstr(buf, "| # | GPU |")); /* nothing rendered */
    const char *bad[] = {"", "--html", "--batch -1 " FIX "mixed.jsonl", "--reference-file " FIX "bad-reference.csv " FIX "mixed.jsonl",
                         "--bogus " FIX "mixed.jsonl"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s board %s > /dev/null 2>&1", bin, bad[i]);
        rc = system(cmd);
        CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "board %s: exit %d, expected 2", bad[i], WEXITSTATUS(rc));
    }
    unlink(path);
}
