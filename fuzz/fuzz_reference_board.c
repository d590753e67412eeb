/* fuzz_reference_board.c — fuzzes the published reference board, CSV `model,gpu,train_tok_s`
 * (src/bench/reference.c, `fastlora board --reference-file`): the input is one CSV file. It must
 * load or fail with an input error; a board that loads is looked up for names and joined with the
 * records of tests/fixtures/board/seed-records.jsonl into boards rendered as Markdown and HTML.
 */
/* fuzz-dict: csv */
#include "fuzz.h"

#include "bench/board.h"
#include "bench/records.h"
#include "bench/reference.h"

static fl_bench_record_list records;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (fl_bench_records_read("tests/fixtures/board/seed-records.jsonl", &records, stderr))
        fprintf(stderr, "fuzz: seed records not read (run from the project root): %s\n", fl_last_error());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_write("reference-board.csv", data, size);
    fl_reference_board ref;
    fl_clear_error();
    int status = fl_reference_board_load(&ref, path);
    fz_check(status, "fl_reference_board_load");
    if (status) return 0;
    volatile double sum = fl_reference_board_find(&ref, "Qwen/Qwen2.5-7B", "NVIDIA H200");
    for (size_t i = 0; i < ref.n; i++) {
        double v = fl_reference_board_find(&ref, ref.entries[i].weights, ref.entries[i].gpu);
        if (v < 0) abort(); /* every entry finds a figure (the first of equal names) */
        sum += v;
    }
    (void)sum;
    fl_board_set set;
    fl_board_build(&set, &records, &ref, 0, 0);
    fl_board_write_markdown(fz_devnull(), &set, 0);
    fl_board_write_html(fz_devnull(), &set, "generated");
    fl_board_set_free(&set);
    fl_reference_board_free(&ref);
    return 0;
}
