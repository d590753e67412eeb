/* test_tokenizer_offsets.c — the byte range of each token in the original text, and what the
 * trainer's loss mask makes of it. The ranges themselves are checked against HF tokenizers on the
 * parity fixtures (test_tokenizer.c); here: a SentencePiece-style tokenizer that prepends "▁"
 * (TinyLlama, Llama-2 style) gives the standalone "▁" the range of the first character, as HF does
 * (its offsets are (0, 1) in characters), so a text row trains it like every other token; before,
 * the "▁" had an empty range and the text shape's "reaches into the text" test dropped it whenever
 * the first character did not merge with "▁" (CJK, Greek, Korean, ...). */
#include "test.h"

#include "common/error.h"
#include "tokenizer/tokenizer.h"
#include "train/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fl_tokenizer *load_tinyllama(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models/TinyLlama-1.1B-Chat-v1.0", fl_test_shared_dir());
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, dir) == 0, "load %s: %s", dir, fl_last_error());
    return tok;
}

/* Every token of a text row is a target (mask[0] is context, never a target). */
TEST(tokenizer_offsets_text_rows_train_every_token) {
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    fl_tokenizer *tok = load_tinyllama();
    if (!tok) return;
    int32_t sp = fl_tokenizer_token_to_id(tok, "\xE2\x96\x81"); // "▁" alone
    CHECK(sp >= 0);
    const char *rows[] = {"{\"text\": \"中文\"}", "{\"text\": \"Ελληνικά\"}", "{\"text\": \"한국어\"}",
                          "{\"text\": \"𝄞 music\"}", "{\"text\": \" x\"}", "{\"text\": \"hello world\"}"};
    int standalone = 0;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        fl_data_options o = fl_data_options_default();
        o.eos_id = fl_tokenizer_eos_id(tok);
        fl_doc d;
        CHECK_EQ_INT(fl_data_parse_line(rows[r], strlen(rows[r]), tok, &o, &d), 0);
        for (int i = 1; i < d.n; i++) {
            CHECK_MSG(d.mask[i] == 1, "%s: token %d (id %d) is not trained", rows[r], i, d.ids[i]);
            standalone += d.ids[i] == sp;
        }
        free(d.ids);
        free(d.mask);
    }
    CHECK(standalone >= 4); // the rows that start with a character that does not merge with "▁"
    fl_tokenizer_free(tok);
}

/* The "▁" belongs to the first character of its segment: with a prompt, to the prompt (not a
 * target); at the start of a completion after a special token, to the completion. */
TEST(tokenizer_offsets_prepended_space_follows_first_character) {
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    fl_tokenizer *tok = load_tinyllama();
    if (!tok) return;
    fl_token_ids ids = {.want_offsets = 1};
    const char *text = "中文</s>한국"; // segments "中文" [0, 6) and "한국" [10, 16)
    CHECK_EQ_INT(fl_tokenizer_encode(tok, text, strlen(text), FL_ENCODE_ADD_SPECIAL, &ids), 0);
    // HF tokenizers: <s> (0,0) ▁ (0,1) 中 (0,1) 文 (1,2) </s> (2,6) ▁ (6,7) 한 (6,7) 국 (7,8) in characters
    uint32_t want[][2] = {{0, 0}, {0, 3}, {0, 3}, {3, 6}, {6, 10}, {10, 13}, {10, 13}, {13, 16}};
    CHECK_EQ_INT(ids.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < ids.n && i < sizeof want / sizeof want[0]; i++)
        CHECK_MSG(ids.offsets[2 * i] == want[i][0] && ids.offsets[2 * i + 1] == want[i][1], "token %zu: [%u, %u), want [%u, %u)",
                  i, ids.offsets[2 * i], ids.offsets[2 * i + 1], want[i][0], want[i][1]);
    fl_token_ids_free(&ids);
    fl_data_options o = fl_data_options_default();
    o.eos_id = -1;
    fl_doc d;
    const char *row = "{\"prompt\": \"中\", \"completion\": \"文\"}";
    CHECK_EQ_INT(fl_data_parse_line(row, strlen(row), tok, &o, &d), 0);
    CHECK_EQ_INT(d.n, 4); // <s> ▁ 中 文
    if (d.n == 4) {
        CHECK_EQ_INT(d.mask[1], 0);
        CHECK_EQ_INT(d.mask[2], 0);
        CHECK_EQ_INT(d.mask[3], 1);
    }
    free(d.ids);
    free(d.mask);
    fl_tokenizer_free(tok);
}
