/* fuzz_options_roundtrip.h — the property both config-file harnesses check (fuzz_train_options.c
 * for JSON, fuzz_yaml_config.c for YAML): loaded options validate or fail with an input error,
 * and their train_config.json reads back through the JSON reader and writes again byte for byte
 * the same (a run repeats from its train_config.json). Not a harness of its own.
 */
#ifndef FL_FUZZ_OPTIONS_ROUNDTRIP_H
#define FL_FUZZ_OPTIONS_ROUNDTRIP_H

#include "fuzz.h"

#include "train/options.h"

static void fz_options_roundtrip(const fl_train_options *o) {
    fl_clear_error();
    fz_check(fl_train_options_validate(o), "fl_train_options_validate");
    const char *first = fz_path("first.json"), *second = fz_path("second.json");
    if (fl_train_options_save_json(o, first)) abort();
    fl_train_options again;
    fl_train_options_default(&again);
    if (fl_train_options_load_json(&again, first)) {
        fprintf(stderr, "fuzz: train_config.json does not read back: %s\n", fl_last_error());
        abort();
    }
    if (fl_train_options_save_json(&again, second)) abort();
    size_t na, nb;
    char *a = (char *)fz_slurp(first, &na), *b = (char *)fz_slurp(second, &nb);
    if (na != nb || memcmp(a, b, na)) {
        fprintf(stderr, "fuzz: train_config.json changes when read and written again:\n%s\n---\n%s\n", a, b);
        abort();
    }
    free(a);
    free(b);
    fl_train_options_free(&again);
}

#endif
