/* fuzz_gpu_catalog.c — fuzzes the GPU catalog CSV (src/plan/csv.c, src/plan/gpu_catalog.c): the
 * input is one or two CSV files separated by FZ_SEP. The first is loaded as a catalog
 * (`gpus --catalog`) and also merged onto the shipped data/gpus.csv (`plan --catalog` overrides);
 * the second, when present, is merged onto the first. Whatever loads is then searched by name and
 * printed column by column, as `gpus` and `plan` do. Failures must be input errors.
 */
/* fuzz-dict: csv json */
#include "fuzz.h"

#include "plan/gpu_catalog.h"

static fl_gpu_catalog shipped;
static int have_shipped;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    have_shipped = fl_gpu_catalog_load(&shipped, "data/gpus.csv") == 0;
    if (!have_shipped) fprintf(stderr, "fuzz: data/gpus.csv not loaded (run from the project root): %s\n", fl_last_error());
    return 0;
}

static void use(const fl_gpu_catalog *c) {
    static const char *names[] = {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "H200", "4090", "", "x"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const fl_gpu_spec *g = fl_gpu_catalog_find(c, names[i]);
        if (g && (g < c->gpus || g >= c->gpus + c->n)) abort();
    }
    volatile double sum = 0;
    for (int r = 0; r < c->n; r++) {
        const fl_gpu_spec *g = &c->gpus[r];
        if (fl_gpu_catalog_find(c, g->name) == NULL) abort();
        for (int k = 0; k < fl_gpu_column_count(); k++) {
            if (fl_gpu_column_is_text(k)) sum += (double)strlen(fl_gpu_column_text(g, k));
            else sum += fl_gpu_column_number(g, k);
        }
        sum += fl_gpu_train_tflops(g) + fl_gpu_usable_bytes(g);
    }
    (void)sum;
}

/* A copy of the shipped catalog (merges change it in place). */
static void copy_shipped(fl_gpu_catalog *c) {
    c->n = shipped.n;
    c->gpus = malloc(sizeof *c->gpus * (size_t)(shipped.n ? shipped.n : 1));
    memcpy(c->gpus, shipped.gpus, sizeof *c->gpus * (size_t)shipped.n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[2];
    int n = fz_split(data, size, p, 2);
    const char *first = fz_write("catalog.csv", p[0].data, p[0].size);
    const char *second = fz_write("override.csv", p[n - 1].data, p[n - 1].size);
    fl_gpu_catalog c;
    fl_clear_error();
    int status = fl_gpu_catalog_load(&c, first);
    fz_check(status, "fl_gpu_catalog_load");
    if (!status) {
        use(&c);
        if (n > 1) {
            fl_clear_error();
            status = fl_gpu_catalog_merge_file(&c, second);
            fz_check(status, "fl_gpu_catalog_merge_file");
            use(&c);
        }
        fl_gpu_catalog_free(&c);
    }
    if (have_shipped) {
        copy_shipped(&c);
        fl_clear_error();
        status = fl_gpu_catalog_merge_file(&c, first);
        fz_check(status, "fl_gpu_catalog_merge_file");
        use(&c);
        fl_gpu_catalog_free(&c);
    }
    return 0;
}
