/* test_board.c — `fastlora board`: the published shape reproduced byte for byte, ordering, ties,
 * missing cells, reference columns, peers and CPU rows, the HTML page, and the headless-Chromium
 * screenshot (skipped without chromium). Fixtures: tests/fixtures/board/. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/board.h"
#include "test.h"

#define FIX "tests/fixtures/board/"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

/* Renders a board set as Markdown into a malloc'd string. */
static char *render_markdown(const fl_board_set *set, int spaced) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fl_board_write_markdown(f, set, spaced);
    fclose(f);
    return buf;
}

static char *render_html(const fl_board_set *set) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fl_board_write_html(f, set, "note <&>");
    fclose(f);
    return buf;
}

TEST(board_reproduces_the_published_shape) {
    /* records carrying the published figures render to the published text exactly */
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(FIX "seed-records.jsonl", &list, stdout), 0);
    CHECK_EQ_INT(list.n, 43);
    fl_board_set set;
    fl_board_build(&set, &list, NULL, 0, 0);
    CHECK_EQ_INT(set.n, 4);
    char *md = render_markdown(&set, 0);
    char *want = slurp(FIX "seed-board.txt");
    CHECK(want != NULL);
    if (md && want) {
        size_t wl = strlen(want);
        /* the published text has no final newline; ours ends every line */
        CHECK_MSG(strlen(md) == wl + 1 && !strncmp(md, want, wl) && md[wl] == '\n', "markdown differs:\n%s", md);
    }
    free(md);
    free(want);
    fl_board_set_free(&set);
    fl_bench_record_list_free(&list);
}

TEST(board_ties_missing_cells_reference_and_peers) {
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(FIX "mixed.jsonl", &list, stdout), 0);
    CHECK_EQ_INT(list.n, 8);
    fl_reference_board ref;
    CHECK_EQ_INT(fl_reference_board_load(&ref, FIX "reference.csv"), 0);
    CHECK_EQ_INT(ref.n, 2);
    /* names match with case and runs of spaces ignored */
    CHECK_CLOSE(fl_reference_board_find(&ref, "qwen/qwen2.5-7b", "NVIDIA H100 80GB HBM3"), 8514.3, 0, 0);
    CHECK(fl_reference_board_find(&ref, "Qwen/Qwen2.5-7B", "NVIDIA H100") < 0);
    fl_board_set set;
    fl_board_build(&set, &list, &ref, 0, 0);
    CHECK_EQ_INT(set.n_records_skipped, 1); /* the interrupted one */
    CHECK_EQ_INT(set.n, 2);
    char *md = render_markdown(&set, 0);
    char *want = slurp(FIX "mixed-reference.md");
    CHECK(md && want && !strcmp(md, want));
    if (md && want && strcmp(md, want)) printf("got:\n%s\nwant:\n%s\n", md, want);
    free(md);
    free(want);
    /* ties share a rank and are ordered by name; the slower duplicate is dropped */
    const fl_board *b = &set.boards[0];
    CHECK_EQ_INT(b->n, 3);
    CHECK(b->rows[0].rank == 1 && b->rows[1].rank == 1 && b->rows[2].rank == 3);
    CHECK_CLOSE(b->rows[1].rec.train_tok_s, 9000.0, 0, 0);
    fl_board_set_free(&set);

    /* without the reference: three columns, no ratio */
    fl_board_build(&set, &list, NULL, 0, 0);
    md = render_markdown(&set, 1);
    CHECK(md && !strstr(md, "reference") && strstr(md, "| # | GPU | train tok/s |\n|---|---|---|\n"));
    CHECK(md && strstr(md, "\n\nWeights: Qwen/Qwen2.5-7B\n\nMeasured in")); /* --spaced */
    free(md);
    fl_board_set_free(&set);

    /* filters: only 4 x 256 leaves the CPU board */
    fl_board_build(&set, &list, NULL, 4, 256);
    CHECK_EQ_INT(set.n, 1);
    CHECK(set.n == 1 && !strcmp(set.boards[0].weights, "HuggingFaceTB/SmolLM2-135M"));
    fl_board_set_free(&set);

    /* no records at all: the frame, no boards */
    fl_bench_record_list empty = {0};
    fl_board_build(&set, &empty, NULL, 0, 0);
    md = render_markdown(&set, 0);
    CHECK(md && !strstr(md, "Weights:") && strstr(md, "Every number"));
    free(md);
    fl_board_set_free(&set);
    fl_reference_board_free(&ref);
    fl_bench_record_list_free(&list);
}

TEST(board_html_is_self_contained) {
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(FIX "mixed.jsonl", &list, stdout), 0);
    fl_reference_board ref;
    CHECK_EQ_INT(fl_reference_board_load(&ref, FIX "reference.csv"), 0);
    fl_board_set set;
    fl_board_build(&set, &list, &ref, 0, 0);
    char *html = render_html(&set);
    CHECK(html != NULL);
    if (html) {
        CHECK_STR_CONTAINS(html, "<!DOCTYPE html>");
        CHECK_STR_CONTAINS(html, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
        CHECK_STR_CONTAINS(html, "Weights: Qwen/Qwen2.5-7B");
        CHECK_STR_CONTAINS(html, "<td class=\"num\">1.02x</td>");
        CHECK_STR_CONTAINS(html, "note &lt;&amp;&gt;"); /* escaped */
        /* no external assets: the only URL is the SVG namespace */
        CHECK(!strstr(html, "<link") && !strstr(html, "<script") && !strstr(html, "src=") && !strstr(html, "url("));
        int urls = 0;
        for (const char *p = html; (p = strstr(p, "http")); p++) urls++;
        CHECK_EQ_INT(urls, 2); /* one namespace per chart, two boards */
        /* one bar per row plus the published bars and the legend */
        int rects = 0;
        for (const char *p = html; (p = strstr(p, "<rect")); p++) rects++;
        CHECK_EQ_INT(rects, 6 + 2 + 3 + 3); /* bars, published bars, two legends (fastlora, peer, published) */
    }
    free(html);
    fl_board_set_free(&set);
    fl_reference_board_free(&ref);
    fl_bench_record_list_free(&list);
}

/* The command end to end: Markdown on stdout, the HTML page written atomically. */
TEST(board_cli_markdown_and_html) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char dir[] = "/tmp/fastlora_test_board_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char cmd[1024], md_path[128], html_path[128];
    snprintf(md_path, sizeof md_path, "%s/board.md", dir);
    snprintf(html_path, sizeof html_path, "%s/board.html", dir);
    snprintf(cmd, sizeof cmd, "%s board --reference --reference-file " FIX "reference.csv " FIX "mixed.jsonl --html %s > %s 2>/dev/null",
             bin, html_path, md_path);
    CHECK_EQ_INT(system(cmd), 0);
    char *md = slurp(md_path), *want = slurp(FIX "mixed-reference.md"), *html = slurp(html_path);
    CHECK(md && want && !strcmp(md, want));
    CHECK(html && strstr(html, "</html>"));
    free(md);
    free(want);
    free(html);
    /* the shipped reference board is found without --reference-file */
    snprintf(cmd, sizeof cmd, "%s board --reference " FIX "seed-records.jsonl > %s 2>/dev/null", bin, md_path);
    CHECK_EQ_INT(system(cmd), 0);
    md = slurp(md_path);
    CHECK(md && strstr(md, "| 1 | NVIDIA B300 | 22351.1 | 22351.1 | 1.00x |"));
    free(md);
    unlink(md_path);
    unlink(html_path);
    rmdir(dir);
}

/* Headless Chromium renders the page to a PNG (scripts/board-screenshot); skipped without it. */
TEST(board_screenshot_in_headless_chromium) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    if (system("command -v chromium > /dev/null 2>&1 || command -v chromium-browser > /dev/null 2>&1") != 0)
        SKIP("chromium not installed");
    char dir[] = "/tmp/fastlora_test_shot_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char cmd[1024], html[128], png[128];
    snprintf(html, sizeof html, "%s/board.html", dir);
    snprintf(png, sizeof png, "%s/board.png", dir);
    snprintf(cmd, sizeof cmd, "%s board --reference --reference-file " FIX "reference.csv " FIX "mixed.jsonl --html %s > /dev/null 2>&1",
             bin, html);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "scripts/board-screenshot %s %s > /dev/null 2>&1", html, png);
    CHECK_EQ_INT(system(cmd), 0);
    FILE *f = fopen(png, "rb");
    unsigned char sig[8] = {0};
    size_t got = f ? fread(sig, 1, 8, f) : 0;
    struct stat st = {0};
    stat(png, &st);
    if (f) fclose(f);
    CHECK(got == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8));
    CHECK(st.st_size > 10000); /* not a blank page */
    unlink(png);
    unlink(html);
    rmdir(dir);
}
