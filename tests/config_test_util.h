/* config_test_util.h — what the config tests share (test_config_and_loading.c, test_config_gemma.c,
 * test_config_smollm3.c, test_olmo2.c): the fields every family has, compared between a config.json's
 * reading and the preset it should equal; a JSON text loaded as a config.json of a fresh folder, and an
 * edit of one refused in one line. Family fields are each test's own. Static inline. */
#ifndef FL_TESTS_CONFIG_TEST_UTIL_H
#define FL_TESTS_CONFIG_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/config.h"
#include "test.h"

/* `json` written to dir/config.json, dir (64 bytes) a fresh /tmp folder, and loaded: fl_config_load's
 * status (-1 when the file cannot be written). The caller removes dir (config_test_remove_dir). */
static inline int config_test_load_json(fl_model_config *cfg, const char *json, char *dir) {
    snprintf(dir, 64, "/tmp/fastlora-config-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(json, f);
    fclose(f);
    return fl_config_load(cfg, path);
}

static inline void config_test_remove_dir(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

/* `base` with the text `from` replaced by `to`, loaded: refused in one line naming config.json and `field` */
static inline void config_test_refused_edit(const char *base, const char *from, const char *to, const char *field) {
    const char *at = strstr(base, from);
    CHECK_MSG(at != NULL, "'%s' not in the config", from);
    if (!at) return;
    size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
    char *json = malloc(n), dir[64];
    snprintf(json, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    fl_model_config cfg;
    CHECK_EQ_INT(config_test_load_json(&cfg, json, dir), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json");
    CHECK_STR_CONTAINS(fl_last_error(), field);
    CHECK(strchr(fl_last_error(), '\n') == NULL);
    config_test_remove_dir(dir);
    free(json);
}

static inline void check_config_core_equal(const fl_model_config *got, const fl_model_config *want) {
    CHECK_EQ_INT(got->arch, want->arch);
    CHECK_EQ_INT(got->vocab_size, want->vocab_size);
    CHECK_EQ_INT(got->hidden_size, want->hidden_size);
    CHECK_EQ_INT(got->intermediate_size, want->intermediate_size);
    CHECK_EQ_INT(got->n_layers, want->n_layers);
    CHECK_EQ_INT(got->n_heads, want->n_heads);
    CHECK_EQ_INT(got->n_kv_heads, want->n_kv_heads);
    CHECK_EQ_INT(got->head_dim, want->head_dim);
    CHECK_CLOSE(got->rope_theta, want->rope_theta, 0, 1e-12);
    CHECK(got->rms_norm_eps == want->rms_norm_eps);
    CHECK_EQ_INT(got->tie_word_embeddings, want->tie_word_embeddings);
}

#endif
