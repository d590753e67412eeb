/* test_preference_data.c — preference rows to token pairs against TRL 1.16's DPOTrainer
 * (tests/fixtures/pref/dpo_rows.json) and ORPOTrainer/CPOTrainer (orpo_rows.json), both written by
 * tools/make_preference_fixtures.py running TRL's own dataset preparation and collator — standard and conversational rows, implicit prompts (characters and
 * whole messages, a space before the split, one side a prefix of the other), EOS already present,
 * a prompt merging into its completion, multi-byte text, truncation at max_length, rows dropped for
 * a prompt that fills it; on a byte-level BPE without BOS and, when ../shared is present,
 * TinyLlama's SentencePiece BPE that adds BOS. Every id and every completion-mask bit must be
 * TRL's. Plus bad rows: one line each naming the field. */
#include "test.h"

#include "common/error.h"
#include "train/preference_data.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int same_seq(const fl_pref_pair *p, int s, json_t *want) {
    json_t *ids = json_object_get(want, "ids"), *mask = json_object_get(want, "completion_mask");
    if ((size_t)p->n[s] != json_array_size(ids)) return 0;
    for (int t = 0; t < p->n[s]; t++)
        if (p->ids[s][t] != json_integer_value(json_array_get(ids, (size_t)t)) ||
            (t >= p->prompt_len[s]) != json_integer_value(json_array_get(mask, (size_t)t)))
            return 0;
    return 1;
}

static void check_rows(const char *path, fl_pref_tokenization rules) {
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    CHECK_MSG(root != NULL, "%s: %s", path, err.text);
    if (!root) return;
    const char *shared = fl_test_shared_dir();
    fl_tokenizer *tok = NULL;
    char current[512] = "";
    fl_pref_options opt = {.max_length = (int)json_integer_value(json_object_get(root, "max_length")), .rules = rules};
    json_t *cases = json_object_get(root, "cases");
    int n = 0, same = 0, dropped = 0, skipped = 0;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *name = json_string_value(json_object_get(c, "tokenizer"));
        if (strcmp(name, current)) {
            char dir[600];
            if (!strncmp(name, "../shared/", 10)) {
                if (!shared) { skipped++; continue; }
                snprintf(dir, sizeof dir, "%s/%s", shared, name + 10);
            } else snprintf(dir, sizeof dir, "%s", name);
            if (tok) fl_tokenizer_free(tok);
            tok = NULL;
            if (fl_tokenizer_load(&tok, dir)) { fl_test_fail(__FILE__, __LINE__, "%s", fl_last_error()); break; }
            snprintf(current, sizeof current, "%s", name);
        }
        fl_pref_pair p;
        int rc = fl_pref_encode_row(json_object_get(c, "row"), tok, &opt, &p);
        n++;
        if (json_is_true(json_object_get(c, "dropped"))) {
            CHECK_MSG(rc == FL_PREF_DROPPED, "case %zu (%s): TRL dropped the row, rc %d", i, name, rc);
            dropped += rc == FL_PREF_DROPPED;
            same += rc == FL_PREF_DROPPED;
            if (rc == 0) fl_pref_pair_free(&p);
            continue;
        }
        if (rc) { fl_test_fail(__FILE__, __LINE__, "case %zu (%s): %s", i, name, rc == FL_PREF_DROPPED ? "dropped" : fl_last_error()); continue; }
        json_t *prompt_ids = json_object_get(c, "prompt_ids"); // DPO's rows carry the shared prompt
        int ok = same_seq(&p, 0, json_object_get(c, "chosen")) && same_seq(&p, 1, json_object_get(c, "rejected")) &&
                 (!prompt_ids || (size_t)p.prompt_len[0] == json_array_size(prompt_ids));
        CHECK_MSG(ok, "case %zu (%s): ids or masks differ from TRL's (prompt %d, chosen %d, rejected %d tokens; TRL %zu, %zu, %zu)",
                  i, name, p.prompt_len[0], p.n[0], p.n[1], json_array_size(prompt_ids),
                  json_array_size(json_object_get(json_object_get(c, "chosen"), "ids")),
                  json_array_size(json_object_get(json_object_get(c, "rejected"), "ids")));
        same += ok;
        fl_pref_pair_free(&p);
    }
    printf("    %s: %d rows, %d identical to TRL's (%d dropped); %d skipped (../shared absent)\n", path, n, same, dropped, skipped);
    CHECK_MSG(n >= 16, "only %d rows checked", n);
    if (tok) fl_tokenizer_free(tok);
    json_decref(root);
}

TEST(preference_rows_tokenized_as_trl_dpo) { check_rows("tests/fixtures/pref/dpo_rows.json", FL_PREF_TOKENIZE_DPO); }

/* ORPOTrainer's and CPOTrainer's tokenize_row (the same rules): per-side prompt ids, BOS and EOS ids,
 * the completion cut at max_length; the rows TRL cannot train (empty completion) dropped. */
TEST(preference_rows_tokenized_as_trl_orpo_cpo) { check_rows("tests/fixtures/pref/orpo_rows.json", FL_PREF_TOKENIZE_ORPO); }

TEST(preference_bad_rows_one_line_each) {
    fl_tokenizer *tok;
    CHECK_MSG(fl_tokenizer_load(&tok, "tests/fixtures/train/tok") == 0, "%s", fl_last_error());
    static const struct { const char *row, *want; } bad[] = {
        {"{\"prompt\": \"a\", \"chosen\": \"b\"}", "field 'rejected': missing"},
        {"{\"prompt\": \"a\", \"rejected\": \"b\"}", "field 'chosen': missing"},
        {"{\"prompt\": \"a\", \"chosen\": \"b\", \"rejected\": \"b\"}", "the same as 'chosen'"},
        {"{\"prompt\": \"a\", \"chosen\": 3, \"rejected\": \"b\"}", "field 'chosen': expected"},
        {"{\"prompt\": [{\"role\": \"user\", \"content\": \"q\"}], \"chosen\": [{\"role\": \"assistant\", \"content\": \"a\"}], \"rejected\": \"b\"}", "field 'rejected': expected a list"},
        {"{\"prompt\": 7, \"chosen\": \"a\", \"rejected\": \"b\"}", "field 'prompt': expected a string"},
        {"{\"chosen\": \"\", \"rejected\": \"b\"}", "field 'chosen': empty"},
        {"{\"prompt\": [{\"role\": \"user\", \"content\": \"q\"}], \"chosen\": [{\"role\": \"assistant\", \"content\": \"a\"}], \"rejected\": [{\"role\": \"assistant\", \"content\": \"b\"}], \"tools\": \"not json\"}", "field 'tools'"},
        {"[1, 2]", "must be a JSON object"},
    };
    fl_pref_options opt = {.max_length = 64};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *row = json_loads(bad[i].row, JSON_DECODE_ANY, NULL);
        fl_pref_pair p;
        fl_clear_error();
        int rc = fl_pref_encode_row(row, tok, &opt, &p);
        CHECK_MSG(rc == FL_ERR_INPUT, "row %zu: rc %d, want an input error", i, rc);
        CHECK_MSG(strstr(fl_last_error(), bad[i].want) && !strchr(fl_last_error(), '\n'), "row %zu: \"%s\", want \"%s\" on one line",
                  i, fl_last_error(), bad[i].want);
        if (rc == 0) fl_pref_pair_free(&p);
        json_decref(row);
    }
    fl_tokenizer_free(tok);
}
