/* tokenizer_parity.c — tokenizer_parity_check (tokenizer_parity.h). Not a test file: no TEST here. */
#include "tokenizer_parity.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static int ids_equal(const fl_token_ids *got, json_t *want) {
    if (got->n != json_array_size(want)) return 0;
    for (size_t i = 0; i < got->n; i++)
        if (got->ids[i] != json_integer_value(json_array_get(want, i))) return 0;
    return 1;
}

static void print_ids_diff(const char *what, const char *text, const fl_token_ids *got, json_t *want) {
    printf("    %s mismatch on \"%.60s\": got %zu ids, want %zu\n      got :", what, text, got->n, json_array_size(want));
    size_t i = 0;
    while (i < got->n && i < json_array_size(want) && got->ids[i] == json_integer_value(json_array_get(want, i))) i++;
    size_t from = i > 3 ? i - 3 : 0;
    for (size_t k = from; k < got->n && k < from + 10; k++) printf(" %d", got->ids[k]);
    printf("\n      want:");
    for (size_t k = from; k < json_array_size(want) && k < from + 10; k++) printf(" %lld", (long long)json_integer_value(json_array_get(want, k)));
    printf("   (first difference at %zu)\n", i);
}

/* Index of the first token whose original byte range differs from HF's (a flat list of start, end
 * pairs, HF's character offsets in bytes), or got->n when all are equal. */
static size_t offsets_differ(const fl_token_ids *got, json_t *want) {
    if (json_array_size(want) != 2 * got->n) return 0;
    for (size_t i = 0; i < 2 * got->n; i++)
        if (got->offsets[i] != json_integer_value(json_array_get(want, i))) return i / 2;
    return got->n;
}

void tokenizer_parity_check(fl_tokenizer *tok, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "tests/fixtures/tokenizer/%s.jsonl", name);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    int n_text = 0, n_decode = 0, n_offsets = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t err;
        json_t *row = json_loads(line, JSON_ALLOW_NUL, &err);
        CHECK_MSG(row != NULL, "%s: bad fixture line: %s", path, err.text);
        if (!row) continue;
        json_t *text = json_object_get(row, "text");
        if (json_object_get(row, "bad_json")) { // for the CLI's JSONL mode (test_tokenizer_cli.c)
            json_decref(row);
            continue;
        }
        if (text) {
            const char *s = json_string_value(text);
            size_t len = json_string_length(text);
            fl_token_ids ids = {.want_offsets = 1}, plain = {0}; // offsets: no word cache; plain: cached
            CHECK_EQ_INT(fl_tokenizer_encode(tok, s, len, FL_ENCODE_ADD_SPECIAL, &ids), 0);
            CHECK_EQ_INT(fl_tokenizer_encode(tok, s, len, 0, &plain), 0);
            json_t *offsets = json_object_get(row, "offsets");
            if (!ids_equal(&ids, json_object_get(row, "ids"))) {
                if (bad++ < 8) print_ids_diff("ids", s, &ids, json_object_get(row, "ids"));
            } else if (!ids_equal(&plain, json_object_get(row, "ids_plain"))) {
                if (bad++ < 8) print_ids_diff("ids_plain", s, &plain, json_object_get(row, "ids_plain"));
            } else if (offsets) {
                size_t k = offsets_differ(&ids, offsets);
                if (k < ids.n && bad++ < 8)
                    printf("    offsets mismatch on \"%.60s\" at token %zu: got [%u, %u), want [%lld, %lld)\n", s, k,
                           ids.offsets[2 * k], ids.offsets[2 * k + 1], (long long)json_integer_value(json_array_get(offsets, 2 * k)),
                           (long long)json_integer_value(json_array_get(offsets, 2 * k + 1)));
                n_offsets += offsets != NULL;
            }
            char *dec;
            size_t dl;
            CHECK_EQ_INT(fl_tokenizer_decode(tok, ids.ids, ids.n, 0, &dec, &dl), 0);
            const char *want = json_string_value(json_object_get(row, "decoded"));
            if (dl != json_string_length(json_object_get(row, "decoded")) || memcmp(dec, want, dl)) {
                if (bad++ < 8) printf("    decode mismatch on \"%.60s\":\n      got : \"%.80s\"\n      want: \"%.80s\"\n", s, dec, want);
            }
            free(dec);
            fl_token_ids_free(&ids);
            fl_token_ids_free(&plain);
            n_text++;
        } else {
            json_t *arr = json_object_get(row, "decode_ids");
            int skip = json_is_true(json_object_get(row, "skip_special"));
            size_t n = json_array_size(arr);
            int32_t *ids = malloc((n + 1) * sizeof *ids);
            for (size_t i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
            char *dec;
            size_t dl;
            CHECK_EQ_INT(fl_tokenizer_decode(tok, ids, n, skip, &dec, &dl), 0);
            const char *want = json_string_value(json_object_get(row, "decoded"));
            if (dl != json_string_length(json_object_get(row, "decoded")) || memcmp(dec, want, dl)) {
                if (bad++ < 8) printf("    decode_ids mismatch: got \"%.80s\" want \"%.80s\"\n", dec, want);
            }
            free(dec);
            free(ids);
            n_decode++;
        }
        json_decref(row);
    }
    free(line);
    fclose(f);
    printf("    %s: %d strings (%d with offsets), %d decode cases, %d mismatches\n", name, n_text, n_offsets, n_decode, bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(n_text > 50);
}

