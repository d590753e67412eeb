/* fuzz_bench_records.c — fuzzes benchmark result records, JSON Lines (src/bench/records.c, read
 * by `fastlora board`; src/plan/plan.c's calibration reader, read by `fastlora plan --records`):
 * the input is one results file. Both readers must accept it or fail with an input error; the
 * records that read are grouped into boards (with the shipped reference board) and rendered as
 * Markdown and HTML, as `board` does.
 */
/* fuzz-dict: json records */
#include "fuzz.h"

#include "bench/board.h"
#include "bench/records.h"
#include "bench/reference.h"
#include "plan/gpu_catalog.h"
#include "plan/plan.h"

static fl_reference_board ref;
static int have_ref;
static fl_gpu_catalog catalog;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    have_ref = fl_reference_board_load(&ref, "data/reference-board.csv") == 0;
    if (fl_gpu_catalog_load(&catalog, "data/gpus.csv")) {
        fprintf(stderr, "fuzz: data/gpus.csv not loaded (run from the project root): %s\n", fl_last_error());
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_write("results.jsonl", data, size);
    fl_bench_record_list list = {0};
    fl_clear_error();
    int status = fl_bench_records_read(path, &list, fz_devnull());
    fz_check(status, "fl_bench_records_read");
    for (int with_ref = 0; with_ref < 2; with_ref++) {
        fl_board_set set;
        fl_board_build(&set, &list, with_ref && have_ref ? &ref : NULL, with_ref ? 4 : 0, with_ref ? 2048 : 0);
        fl_board_write_markdown(fz_devnull(), &set, with_ref);
        fl_board_write_html(fz_devnull(), &set, "generated");
        fl_board_set_free(&set);
    }
    fl_bench_record_list_free(&list);
    fl_plan_calibration cal;
    fl_clear_error();
    status = fl_plan_calibration_load(&cal, path, &catalog);
    fz_check(status, "fl_plan_calibration_load");
    if (!status) fl_plan_calibration_free(&cal);
    return 0;
}
