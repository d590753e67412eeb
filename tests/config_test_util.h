/* config_test_util.h — what the config tests share (test_config_and_loading.c, test_config_gemma.c,
 * test_config_smollm3.c): the fields every family has, compared between a config.json's reading and
 * the preset it should equal. Family fields are each test's own. Static inline. */
#ifndef FL_TESTS_CONFIG_TEST_UTIL_H
#define FL_TESTS_CONFIG_TEST_UTIL_H

#include "model/config.h"
#include "test.h"

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
