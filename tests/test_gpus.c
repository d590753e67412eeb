/* test_gpus.c — the GPU catalog: the CSV reader, data/gpus.csv, driver-name matching, user
 * overrides, and bad rows reported as file:line (the *_bad_input tests rerun under ASan). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "plan/csv.h"
#include "plan/gpu_catalog.h"
#include "test.h"

#define FIX "tests/fixtures/plan/"

TEST(gpus_csv_quoted_fields) {
    const char *text = "a,b,c\r\n\"x, y\",\"say \"\"hi\"\"\",\"two\nlines\"\n\n# comment\nlast,,\n";
    fl_csv_table t;
    CHECK_EQ_INT(fl_csv_parse(&t, text, strlen(text), "mem.csv"), 0);
    CHECK_EQ_INT(t.n_rows, 3);
    if (t.n_rows == 3) {
        CHECK_EQ_INT(t.rows[1].n, 3);
        CHECK(!strcmp(t.rows[1].fields[0], "x, y"));
        CHECK(!strcmp(t.rows[1].fields[1], "say \"hi\""));
        CHECK(!strcmp(t.rows[1].fields[2], "two\nlines"));
        CHECK_EQ_INT(t.rows[1].line, 2);
        CHECK_EQ_INT(t.rows[2].line, 6);   /* the quoted newline counts */
        CHECK_EQ_INT(t.rows[2].n, 3);
        CHECK(!strcmp(t.rows[2].fields[1], ""));
    }
    fl_csv_free(&t);
}

TEST(gpus_csv_bad_input_stray_quote) {
    const char *text = "a,b\nx\"y,z\n";
    fl_csv_table t;
    CHECK_EQ_INT(fl_csv_parse(&t, text, strlen(text), "mem.csv"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "mem.csv:2: field 1: stray");
    const char *text2 = "a,b\n\"x\"y,z\n";
    CHECK_EQ_INT(fl_csv_parse(&t, text2, strlen(text2), "mem.csv"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "mem.csv:2: field 1: expected ','");
}

TEST(gpus_catalog_default_loads) {
    fl_gpu_catalog c;
    if (access("data/gpus.csv", R_OK) != 0) SKIP("data/gpus.csv not found (run from the repo root)");
    CHECK_EQ_INT(fl_gpu_catalog_load(&c, "data/gpus.csv"), 0);
    CHECK_EQ_INT(c.n, 22);
    const fl_gpu_spec *h100 = fl_gpu_catalog_find(&c, "H100 SXM");
    CHECK(h100 != NULL);
    if (h100) {
        CHECK_CLOSE(h100->bf16_dense_tflops, 989, 0, 0);   /* dense, not the sheet's sparse 1979 */
        CHECK_CLOSE(h100->mem_bw_gbs, 3350, 0, 0);
        CHECK_CLOSE(h100->usable_mib, 81559, 0, 0);
        CHECK_CLOSE(h100->price_usd_hr, 2.69, 0, 1e-9);
        CHECK(!strcmp(h100->arch, "Hopper") && !strcmp(h100->sm, "sm_90"));
        CHECK_STR_CONTAINS(h100->source, "nvidia.com/en-us/data-center/h100");
        CHECK_STR_CONTAINS(h100->origin, "data/gpus.csv:6");
    }
    const fl_gpu_spec *t4 = fl_gpu_catalog_find(&c, "Tesla T4");
    CHECK(t4 && t4->bf16_dense_tflops == 0 && t4->fp16_dense_tflops == 65 && t4->price_usd_hr < 0);
    if (t4) CHECK_CLOSE(fl_gpu_train_tflops(t4), 65, 0, 0);   /* no bf16: the fp16 rate */
    fl_gpu_catalog_free(&c);
    /* the default search finds the same file from the repo root */
    CHECK_EQ_INT(fl_gpu_catalog_load_default(&c), 0);
    CHECK_EQ_INT(c.n, 22);
    fl_gpu_catalog_free(&c);
}

TEST(gpus_find_driver_names) {
    fl_gpu_catalog c;
    if (fl_gpu_catalog_load(&c, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    struct { const char *query, *short_name; } cases[] = {
        {"NVIDIA H200", "H200 SXM"},
        {"NVIDIA H200 NVL", "H200 NVL"},
        {"NVIDIA H100 80GB HBM3", "H100 SXM"},
        {"NVIDIA H100 PCIe", "H100 PCIe"},
        {"NVIDIA A100-SXM4-40GB", "A100 40GB"},
        {"NVIDIA A100 80GB SXM4", "A100 80GB"},
        {"NVIDIA A10", "A10"},
        {"NVIDIA A10G", "A10G"},
        {"NVIDIA L4", "L4"},
        {"NVIDIA L40S", "L40S"},
        {"NVIDIA T4", "T4"},
        {"NVIDIA B300", "B300"},
        {"NVIDIA B300 SXM6 AC", "B300"},
        {"NVIDIA B200", "B200"},
        {"NVIDIA GeForce RTX 4090", "RTX 4090"},
        {"rtx 4090", "RTX 4090"},
        {"NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"},
        {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000"},
        {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000"},
        {"Tesla V100-SXM2-16GB", "V100 16GB"},
        {"  nvidia h100 80gb hbm3  ", "H100 SXM"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fl_gpu_spec *g = fl_gpu_catalog_find(&c, cases[i].query);
        CHECK_MSG(g && !strcmp(g->short_name, cases[i].short_name), "'%s' -> %s (expected %s)", cases[i].query,
                  g ? g->short_name : "NULL", cases[i].short_name);
    }
    CHECK(fl_gpu_catalog_find(&c, "AMD EPYC") == NULL);
    CHECK(fl_gpu_catalog_find(&c, "NVIDIA A30") == NULL);
    CHECK(fl_gpu_catalog_find(&c, "") == NULL);
    fl_gpu_catalog_free(&c);
}

TEST(gpus_user_override) {
    fl_gpu_catalog c;
    if (fl_gpu_catalog_load(&c, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    int n0 = c.n;
    CHECK_EQ_INT(fl_gpu_catalog_merge_file(&c, FIX "override.csv"), 0);
    CHECK_EQ_INT(c.n, n0 + 1);
    const fl_gpu_spec *h = fl_gpu_catalog_find(&c, "NVIDIA H100 80GB HBM3");
    CHECK(h != NULL);
    if (h) {
        CHECK_CLOSE(h->price_usd_hr, 1.50, 0, 1e-12);
        CHECK_CLOSE(h->bf16_dense_tflops, 989, 0, 0);    /* empty cells keep the catalog's values */
        CHECK_CLOSE(h->vram_gb, 80, 0, 0);
        CHECK(!strcmp(h->notes, "my cluster's rate, \"reserved\""));
        CHECK_STR_CONTAINS(h->origin, "override.csv:3 (override)");
    }
    const fl_gpu_spec *g = fl_gpu_catalog_find(&c, "RTX 4090");
    CHECK(g && g->price_usd_hr == 0.20);
    const fl_gpu_spec *mine = fl_gpu_catalog_find(&c, "My Lab Card, 48 GB");
    CHECK(mine && mine->vram_gb == 48 && mine->bf16_dense_tflops == 200 && mine->usable_mib < 0 && mine->tdp_w < 0);
    if (mine) {
        CHECK(!strcmp(mine->short_name, "My Lab Card, 48 GB"));
        CHECK_CLOSE(fl_gpu_usable_bytes(mine), 48e9 * 0.97, 0, 1e-12);
    }
    fl_gpu_catalog_free(&c);
}

TEST(gpus_catalog_bad_input_rows) {
    struct { const char *file, *expect; } cases[] = {
        {FIX "bad_number.csv", FIX "bad_number.csv:3: mem_bw_gbs: expected a number > 0, got 'fast'"},
        {FIX "bad_field_count.csv", FIX "bad_field_count.csv:3: expected 4 fields as in the header, got 3"},
        {FIX "bad_quote.csv", FIX "bad_quote.csv:3: unterminated quoted field"},
        {FIX "bad_column.csv", FIX "bad_column.csv:1: header: unknown column 'bandwidth'"},
        {FIX "bad_duplicate.csv", FIX "bad_duplicate.csv:3: name: 'card a' appears twice in this file (first at line 2)"},
        {FIX "bad_new_row_incomplete.csv", FIX "bad_new_row_incomplete.csv:2: vram_gb: expected a number > 0"},
        {FIX "bad_negative.csv", FIX "bad_negative.csv:2: vram_gb: expected a number > 0, got '-24'"},
        {FIX "no_such_file.csv", "cannot read " FIX "no_such_file.csv: No such file or directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_gpu_catalog c;
        CHECK_EQ_INT(fl_gpu_catalog_load(&c, cases[i].file), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].expect);
        fl_gpu_catalog_free(&c);
    }
    /* a bad user file leaves the catalog usable */
    fl_gpu_catalog c;
    if (fl_gpu_catalog_load(&c, "data/gpus.csv") == 0) {
        int n = c.n;
        CHECK_EQ_INT(fl_gpu_catalog_merge_file(&c, FIX "bad_number.csv"), FL_ERR_INPUT);
        CHECK_EQ_INT(c.n, n);
        fl_gpu_catalog_free(&c);
    }
}

TEST(gpus_cli_bad_input_catalog) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s gpus --catalog " FIX "bad_number.csv > /tmp/fl_gpus_bad.out 2>&1", bin);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    FILE *f = fopen("/tmp/fl_gpus_bad.out", "r");
    char buf[1024] = "";
    if (f) { size_t n = fread(buf, 1, sizeof buf - 1, f); buf[n] = 0; fclose(f); }
    CHECK_STR_CONTAINS(buf, "bad_number.csv:3: mem_bw_gbs");
    snprintf(cmd, sizeof cmd, "%s gpus --min-vram 80 --arch hopper --sort mem_bw_gbs --json > /tmp/fl_gpus.out 2>&1", bin);
    CHECK_EQ_INT(system(cmd), 0);
    f = fopen("/tmp/fl_gpus.out", "r");
    static char big[65536];
    big[0] = 0;
    if (f) { size_t n = fread(big, 1, sizeof big - 1, f); big[n] = 0; fclose(f); }
    const char *h200 = strstr(big, "H200 SXM"), *h100p = strstr(big, "H100 PCIe");
    CHECK(h200 && h100p && h200 < h100p);   /* 4800 GB/s before 2000 GB/s */
    CHECK(!strstr(big, "A100"));
}
