/* test_bad_input_data.c — inputs users have, given where fastlora did not expect them: a dataset
 * file with no usable record is ONE line (the count, the first bad record, what would work: --fields,
 * --format text-file), never thousands; bad plain-text files (empty, blank, binary, Latin-1,
 * UTF-16); and convert-llama2c given a SentencePiece .model (read: a protobuf ModelProto built here,
 * damaged every way the reader checks, and every truncation of it), a .vocab listing, a
 * tokenizer.json, or a tokenizer as --checkpoint. The shared data (gsm8k, tok512.model) is used by
 * path when ../shared is there. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/data.h"
#include "train/llama2c.h"

#define TOK_DIR "tests/fixtures/train/tok"

static fl_tokenizer *load_tok(void) {
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, TOK_DIR)) printf("    tokenizer: %s\n", fl_last_error());
    return tok;
}

static char tmp_dir[64];

/* dir/name with bytes in it; a static path (one at a time). */
static const char *put(const char *name, const void *bytes, size_t len) {
    static char path[160];
    if (!tmp_dir[0]) {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/fastlora-bad-data-XXXXXX");
        if (!mkdtemp(tmp_dir)) return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fwrite(bytes, 1, len, f);
    fclose(f);
    return path;
}

/* Removes this test's folder (put() makes a new one next time). */
static void cleanup(void) {
    if (!tmp_dir[0]) return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) printf("    could not remove %s\n", tmp_dir);
    tmp_dir[0] = 0;
}

/* Loads name (holding bytes) under format f: the status; what went to the log in log. */
static int load(const char *name, const char *bytes, size_t len, fl_data_format f, fl_tokenizer *tok, fl_dataset *ds,
                char *log, size_t cap) {
    const char *path = put(name, bytes, len);
    fl_data_options o = fl_data_options_default();
    o.format = f;
    o.eos_id = 2;
    o.vocab_size = 262;
    log[0] = 0;
    o.log = fmemopen(log, cap, "w");
    memset(ds, 0, sizeof *ds);
    int rc = fl_dataset_load(ds, path, tok, &o);
    fclose(o.log);
    return rc;
}

/* ---- datasets --------------------------------------------------------------------------------- */

/* Every record bad: one error line, nothing logged (tiny Shakespeare given as JSONL printed 10
 * "invalid JSON" lines, a count and an error). It names the first bad record and what would work. */
TEST(bad_input_data_file_without_usable_records_is_one_line) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    struct { const char *name, *bytes; fl_data_format f; const char *want, *want2; } cases[] = {
        {"prose.jsonl", "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\n", FL_DATA_AUTO,
         "prose.jsonl: no usable documents (3 records, 3 bad): the first, line 1: invalid JSON",
         "plain text? --format text-file reads it as one document"},
        {"prose2.jsonl", "First Citizen:\n", FL_DATA_TEXT, "no usable documents (1 records, 1 bad)",
         "--format text means JSONL rows {\"text\": ...}; plain text is --format text-file"},
        {"bin.jsonl", "\x1b\x00\x00\x00\x00\x00\x80?\x05\x00\x00\x00<unk>\n", FL_DATA_AUTO, "line 1: invalid JSON",
         "binary data, not text"}, /* 18 bytes: it holds NULs */
        {"gsm8k.jsonl", "{\"question\": \"2+2?\", \"answer\": \"4\"}\n{\"question\": \"3+3?\", \"answer\": \"6\"}\n",
         FL_DATA_AUTO, "(this record has 'question', 'answer'); --fields prompt=question,completion=answer reads them",
         "(2 records, 2 bad)"},
        {"one_key.jsonl", "{\"id\": 7, \"content\": \"the cat\"}\n", FL_DATA_AUTO, "(this record has 'id', 'content')",
         "--fields text=content reads it"},
        {"array.json", "[{\"q\": 1}, {\"text\": 5}]", FL_DATA_AUTO,
         "array.json: no usable documents (2 records, 2 bad): the first, [0]: no known field", NULL},
        {"empty.jsonl", "", FL_DATA_AUTO, "empty.jsonl: empty file: no records to train on", NULL},
        {"blank.jsonl", "\xEF\xBB\xBF\n \t\r\n\n", FL_DATA_AUTO, "blank.jsonl: only blank lines: no records to train on", NULL},
        {"empty_array.json", " [ ] ", FL_DATA_AUTO, "an empty JSON array: no records to train on", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_dataset ds;
        char log[4096];
        size_t len = i == 2 ? 18 : strlen(cases[i].bytes);
        int rc = load(cases[i].name, cases[i].bytes, len, cases[i].f, tok, &ds, log, sizeof log);
        CHECK_MSG(rc == FL_ERR_INPUT, "%s: rc %d", cases[i].name, rc);
        CHECK_MSG(log[0] == 0, "%s: logged '%s'", cases[i].name, log);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].want);
        if (cases[i].want2) CHECK_STR_CONTAINS(fl_last_error(), cases[i].want2);
        CHECK(!strchr(fl_last_error(), '\n'));
        fl_dataset_free(&ds);
    }
    fl_tokenizer_free(tok);
    cleanup();
}

/* A large file of bad lines stops after FL_DATA_GIVE_UP of them when none was good; bad lines
 * before a good one are still reported (held back, then printed in order). */
TEST(bad_input_data_gives_up_and_holds_back_reports) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    size_t n = 3000;
    char *bytes = malloc(n * 8 + 1), *p = bytes;
    for (size_t i = 0; i < n; i++) p += sprintf(p, "no %04zu\n", i);
    fl_dataset ds;
    char log[8192];
    CHECK_EQ_INT(load("many.jsonl", bytes, strlen(bytes), FL_DATA_AUTO, tok, &ds, log, sizeof log), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "many.jsonl: no usable documents in the first 1000 lines (stopped reading): the "
                                        "first, line 1: invalid JSON");
    CHECK_EQ_INT(ds.n_lines, FL_DATA_GIVE_UP);
    CHECK(log[0] == 0);
    fl_dataset_free(&ds);
    free(bytes);
    const char *mixed = "not json\n{\"text\": 3}\n{\"text\": \"the cat\"}\nnot json either\n";
    CHECK_EQ_INT(load("mixed.jsonl", mixed, strlen(mixed), FL_DATA_AUTO, tok, &ds, log, sizeof log), 0);
    CHECK_EQ_INT(ds.n_docs, 1);
    CHECK_EQ_INT(ds.n_bad, 3);
    const char *l1 = strstr(log, "mixed.jsonl:1: skipped: invalid JSON"), *l2 = strstr(log, "mixed.jsonl:2: skipped: field 'text'"),
               *l4 = strstr(log, "mixed.jsonl:4: skipped: invalid JSON");
    CHECK_MSG(l1 && l2 && l4 && l1 < l2 && l2 < l4, "log: %s", log);
    fl_dataset_free(&ds);
    fl_tokenizer_free(tok);
    cleanup();
}

/* Plain text that is not text: one line naming file:line and the byte, for every text format. */
TEST(bad_input_data_text_files) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    struct { const char *name, *bytes; size_t len; const char *want; } cases[] = {
        {"empty.txt", "", 0, "empty.txt: empty file: no records to train on"},
        {"bom_only.txt", "\xEF\xBB\xBF", 3, "bom_only.txt: empty file: no records to train on"},
        {"blank.txt", "\n  \r\n\t\n", 7, "blank.txt: only blank lines: no records to train on"},
        {"nul.txt", "the cat\nab\0cd\n", 14, "nul.txt:2: a NUL byte (byte 3 of the line): binary data, not UTF-8 text"},
        {"latin1.txt", "caf\xE9 au lait\n", 13, "latin1.txt:1: not UTF-8 text (byte 0xE9, byte 4 of the line); save the "
                                              "file as UTF-8"},
        {"utf16.txt", "\xFF\xFEt\0h\0e\0", 8, "UTF-16 or UTF-32 text (byte-order mark FF FE); save it as UTF-8"},
        {"surrogate.txt", "ok\n\xED\xA0\x80\n", 7, "surrogate.txt:2: not UTF-8 text (byte 0xED"},
    };
    fl_data_format formats[] = {FL_DATA_TEXT_FILE, FL_DATA_TEXT_PARAGRAPHS, FL_DATA_TEXT_LINES};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int f = 0; f < 3; f++) {
            fl_dataset ds;
            char log[1024];
            int rc = load(cases[i].name, cases[i].bytes, cases[i].len, f ? formats[f] : FL_DATA_AUTO, tok, &ds, log,
                          sizeof log);
            CHECK_MSG(rc == FL_ERR_INPUT, "%s (%s): rc %d", cases[i].name, fl_data_format_name(formats[f]), rc);
            CHECK_STR_CONTAINS(fl_last_error(), cases[i].want);
            CHECK_MSG(log[0] == 0, "%s: logged '%s'", cases[i].name, log);
            fl_dataset_free(&ds);
        }
    fl_tokenizer_free(tok);
    cleanup();
}

/* gsm8k as a newcomer gives it (`train --data gsm8k/train.jsonl`): one line with the rename. */
TEST(bad_input_data_gsm8k_without_fields_names_the_rename) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char path[512];
    snprintf(path, sizeof path, "%s/data/gsm8k/train.jsonl", shared);
    if (!fl_file_exists(path)) SKIP("gsm8k missing in ../shared");
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    fl_data_options o = fl_data_options_default();
    char log[1024] = "";
    o.log = fmemopen(log, sizeof log, "w");
    fl_dataset ds = {0};
    CHECK_EQ_INT(fl_dataset_load(&ds, path, tok, &o), FL_ERR_INPUT);
    fclose(o.log);
    CHECK_STR_CONTAINS(fl_last_error(), "--fields prompt=question,completion=answer reads them");
    CHECK(log[0] == 0);
    fl_dataset_free(&ds);
    CHECK_EQ_INT(fl_data_parse_field_map("prompt=question,completion=answer", &o), 0);
    o.log = NULL;
    CHECK_EQ_INT(fl_dataset_load(&ds, path, tok, &o), 0);
    CHECK_EQ_INT(ds.n_docs, 7473);
    fl_dataset_free(&ds);
    fl_tokenizer_free(tok);
}

/* ---- convert-llama2c: SentencePiece models and other files ------------------------------------ */

typedef struct { unsigned char b[8192]; size_t n; } pbuf;

static void pb_raw(pbuf *p, const void *d, size_t n) {
    if (p->n + n <= sizeof p->b) memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void pb_varint(pbuf *p, uint64_t v) {
    do {
        unsigned char c = (unsigned char)(v & 0x7F) | (v > 0x7F ? 0x80 : 0);
        pb_raw(p, &c, 1);
        v >>= 7;
    } while (v);
}
static void pb_tag(pbuf *p, int field, int wire) { pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire); }
static void pb_bytes(pbuf *p, int field, const void *d, size_t n) { pb_tag(p, field, 2); pb_varint(p, n); pb_raw(p, d, n); }

/* How a test damages the model it builds. */
typedef struct {
    int model_type, byte_fallback, add_dummy_prefix, charsmap, n_pieces;
    int piece_type_at, piece_type;        /* piece piece_type_at gets this type (0: none) */
    const char *piece_text_at4;           /* piece 4's text instead of "a" */
    int score_wire_varint_at4, nan_score_at4;
    const char *tail;                     /* raw bytes appended to the ModelProto */
    size_t tail_len;
} spm_spec;

static const char *const spm_pieces[8] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "ab"};

/* The ModelProto of a BPE model with the 8 pieces above (scores -i), damaged as s says. */
static void spm_build(pbuf *m, const spm_spec *s) {
    m->n = 0;
    for (int i = 0; i < s->n_pieces; i++) {
        pbuf p = {.n = 0};
        const char *text = i == 4 && s->piece_text_at4 ? s->piece_text_at4 : spm_pieces[i % 8];
        pb_bytes(&p, 1, text, strlen(text));
        float score = i == 4 && s->nan_score_at4 ? NAN : (float)-i;
        if (i == 4 && s->score_wire_varint_at4) { pb_tag(&p, 2, 0); pb_varint(&p, 1); }
        else { pb_tag(&p, 2, 5); pb_raw(&p, &score, 4); }
        int type = i == 0 ? 2 : i < 3 ? 3 : 1;
        if (s->piece_type && i == s->piece_type_at) type = s->piece_type;
        if (type != 1) { pb_tag(&p, 3, 0); pb_varint(&p, (uint64_t)type); }
        pb_bytes(m, 1, p.b, p.n);
    }
    /* normalizer_spec before trainer_spec (SentencePiece writes them the other way; the order of
     * fields is free): then no truncation of the file is a complete, smaller model */
    pbuf t = {.n = 0}, nz = {.n = 0};
    pb_bytes(&nz, 1, "identity", 8);
    pb_bytes(&nz, 2, "\x01\x02\x03", s->charsmap ? 3 : 0);
    if (!s->add_dummy_prefix) { pb_tag(&nz, 3, 0); pb_varint(&nz, 0); }
    pb_bytes(m, 3, nz.b, nz.n);
    pb_bytes(&t, 1, "data/tiny.txt", 13);                 /* an input file: a field skipped */
    pb_tag(&t, 3, 0); pb_varint(&t, (uint64_t)s->model_type);
    pb_tag(&t, 35, 0); pb_varint(&t, (uint64_t)s->byte_fallback);
    pb_bytes(m, 2, t.b, t.n);
    if (s->tail) pb_raw(m, s->tail, s->tail_len);
}

/* A zero-weight llama2.c v0 checkpoint (dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, tied,
 * seq 4) with vocabulary V, at dir/model.bin. */
static const char *tiny_checkpoint(int V) {
    int32_t hdr[7] = {8, 16, 1, 2, 1, V, 4};
    size_t n_floats = (size_t)V * 8 + 8 + 64 + 2 * 4 * 8 + 64 + 8 + 3 * 16 * 8 + 8 + 4 * 2 * 2;
    size_t len = sizeof hdr + 4 * n_floats;
    unsigned char *buf = calloc(1, len);
    memcpy(buf, hdr, sizeof hdr);
    static char path[160];
    snprintf(path, sizeof path, "%s", put("model.bin", buf, len));
    free(buf);
    return path;
}

static int convert_with(const char *tok_name, const void *bytes, size_t len, int V, const char *out_name) {
    char ckpt[160], tok[160], out[160];
    snprintf(ckpt, sizeof ckpt, "%s", tiny_checkpoint(V));
    snprintf(tok, sizeof tok, "%s", put(tok_name, bytes, len));
    snprintf(out, sizeof out, "%s/%s", tmp_dir, out_name);
    return fl_llama2c_convert(ckpt, tok, out, 1);
}

static char *read_text(const char *path) {
    char *data = NULL;
    size_t len;
    return fl_file_read_all(path, FL_FILE_TOKENIZER, &data, &len) ? NULL : data;
}

/* A SentencePiece .model converts as the llama2.c .bin of the same pieces does: the same
 * tokenizer.json, byte for byte. It used to be read as a .bin: "token 1 has a bad length". */
TEST(bad_input_llama2c_sentencepiece_model_converts_like_the_bin) {
    spm_spec s = {.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8};
    pbuf m;
    spm_build(&m, &s);
    CHECK_EQ_INT(convert_with("tok.model", m.b, m.n, 8, "from_model"), 0);
    /* the same pieces as llama2.c's tokenizer.py writes them */
    pbuf bin = {.n = 0};
    int32_t max_len = 16;
    pb_raw(&bin, &max_len, 4);
    const char *as_bin[8] = {"<unk>", "\n<s>\n", "\n</s>\n", " ", "a", "b", "ab", " ab"};
    for (int i = 0; i < 8; i++) {
        float score = (float)-i;
        int32_t n = (int32_t)strlen(as_bin[i]);
        pb_raw(&bin, &score, 4);
        pb_raw(&bin, &n, 4);
        pb_raw(&bin, as_bin[i], (size_t)n);
    }
    CHECK_EQ_INT(convert_with("tok.bin", bin.b, bin.n, 8, "from_bin"), 0);
    char a[200], b[200];
    snprintf(a, sizeof a, "%s/from_model/tokenizer.json", tmp_dir);
    snprintf(b, sizeof b, "%s/from_bin/tokenizer.json", tmp_dir);
    char *ta = read_text(a), *tb = read_text(b);
    CHECK(ta && tb && !strcmp(ta, tb));
    free(ta);
    free(tb);
    snprintf(a, sizeof a, "%s/from_model", tmp_dir);
    fl_tokenizer *tok = NULL;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, a), 0);
    if (tok) {
        fl_token_ids ids = {0};
        CHECK_EQ_INT(fl_tokenizer_encode(tok, "ab ab", 5, 0, &ids), 0);
        CHECK(ids.n == 2 && ids.ids[0] == 7 && ids.ids[1] == 7); /* "▁ab" "▁ab" */
        fl_token_ids_free(&ids);
        fl_tokenizer_free(tok);
    }
    cleanup();
}

/* The shared tok512.model (the SentencePiece file tok512.bin was exported from) gives the same
 * tokenizer.json as tok512.bin. */
TEST(bad_input_llama2c_shared_tok512_model_equals_bin) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char ckpt[512], model[512], bin[512], out_a[200], out_b[200];
    snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
    snprintf(model, sizeof model, "%s/data/stories260K/tok512.model", shared);
    snprintf(bin, sizeof bin, "%s/data/stories260K/tok512.bin", shared);
    if (!fl_file_exists(ckpt) || !fl_file_exists(model) || !fl_file_exists(bin)) SKIP("stories260K files missing");
    put("x", "", 0);
    snprintf(out_a, sizeof out_a, "%s/s_model", tmp_dir);
    snprintf(out_b, sizeof out_b, "%s/s_bin", tmp_dir);
    CHECK_EQ_INT(fl_llama2c_convert(ckpt, model, out_a, 1), 0);
    CHECK_EQ_INT(fl_llama2c_convert(ckpt, bin, out_b, 1), 0);
    strcat(out_a, "/tokenizer.json");
    strcat(out_b, "/tokenizer.json");
    char *ta = read_text(out_a), *tb = read_text(out_b);
    CHECK(ta && tb && strlen(ta) > 10000 && !strcmp(ta, tb));
    free(ta);
    free(tb);
    cleanup();
}

/* Damaged models: one input error naming the file and the field, never a crash; and every
 * truncation of a good model is an error (a prefix is never silently a smaller model). */
TEST(bad_input_llama2c_sentencepiece_model_damaged) {
    spm_spec good = {.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8};
    struct { spm_spec s; const char *want; } cases[] = {
        {{.model_type = 1, .add_dummy_prefix = 1, .n_pieces = 8}, "a SentencePiece unigram model; convert-llama2c converts BPE"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 9}, "9 pieces, but the checkpoint's vocabulary is 8"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_type_at = 5, .piece_type = 4},
         "piece 5 'b' is a user-defined piece"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_type_at = 1, .piece_type = 1},
         "piece 1 is '<s>' (normal); llama2.c's layout is <unk>, <s>, </s>"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_type_at = 6, .piece_type = 6},
         "piece 6 'ab' is a byte piece not spelled <0xNN>"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_type_at = 6, .piece_type = 9},
         "pieces[6].type: not a SentencePiece type"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .byte_fallback = 1},
         "trainer_spec.byte_fallback is true, but 0 of the 256 byte pieces"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .charsmap = 1}, "has a character map (3 bytes)"},
        {{.model_type = 2, .add_dummy_prefix = 0, .n_pieces = 8}, "add_dummy_prefix is false"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_text_at4 = ""}, "pieces[4].piece: an empty piece"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_text_at4 = "\xC3("}, "pieces[4].piece: not UTF-8"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .piece_text_at4 = "ab"}, "tokens 4 and 6 are both 'ab'"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .score_wire_varint_at4 = 1},
         "pieces[4].score: wire type 0, expected 5"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .nan_score_at4 = 1}, "pieces[4].score: not a finite number"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .tail = "\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", .tail_len = 11},
         "a varint longer than 10 bytes"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .tail = "\x2a\x7f" "ab", .tail_len = 4},
         "a length past the end of its message"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .tail = "\x2b", .tail_len = 1}, "a protobuf group"},
        {{.model_type = 2, .add_dummy_prefix = 1, .n_pieces = 8, .tail = "\x00", .tail_len = 1}, "field number 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pbuf m;
        spm_build(&m, &cases[i].s);
        int rc = convert_with("bad.model", m.b, m.n, 8, "bad_out");
        CHECK_MSG(rc == FL_ERR_INPUT, "case %zu: rc %d", i, rc);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].want);
        CHECK_STR_CONTAINS(fl_last_error(), "bad.model");
    }
    pbuf m;
    spm_build(&m, &good);
    for (size_t cut = 2; cut < m.n; cut++) {
        int rc = convert_with("cut.model", m.b, cut, 8, "cut_out");
        CHECK_MSG(rc == FL_ERR_INPUT, "cut at %zu of %zu: rc %d", cut, m.n, rc);
    }
    cleanup();
}

/* The other files beside a llama2.c model, each given where a newcomer would: one line saying
 * what to pass instead (they were read as a tokenizer .bin or a checkpoint of nonsense sizes). */
TEST(bad_input_llama2c_wrong_files_say_what_to_pass) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char ckpt[160], vocab[160], json[160], tokbin[160], v1[160], out[4096];
    snprintf(ckpt, sizeof ckpt, "%s", tiny_checkpoint(8));
    snprintf(vocab, sizeof vocab, "%s", put("tok.vocab", "<unk>\t0\n<s>\t0\n</s>\t0\n\xE2\x96\x81\t-3\n", 26));
    snprintf(json, sizeof json, "%s", put("tokenizer.json", " {\"model\": {}}", 15));
    pbuf bin = {.n = 0};
    int32_t max_len = 6;
    pb_raw(&bin, &max_len, 4);
    for (int i = 0; i < 8; i++) {
        float score = 0;
        int32_t n = 1;
        pb_raw(&bin, &score, 4);
        pb_raw(&bin, &n, 4);
        pb_raw(&bin, "abcdefgh" + i, 1);
    }
    snprintf(tokbin, sizeof tokbin, "%s", put("tok.bin", bin.b, bin.n));
    int32_t ak42[8] = {0x616b3432, 1, 8, 16, 1, 2, 1, 8};
    snprintf(v1, sizeof v1, "%s", put("v1.bin", ak42, sizeof ak42));
    struct { const char *c, *t, *want; } cases[] = {
        {ckpt, vocab, "a SentencePiece .vocab listing (piece, score) has no piece types or model type; pass the .model"},
        {ckpt, json, "a JSON file (a Hugging Face tokenizer.json?); --tokenizer takes llama2.c's tokenizer .bin or a "
                     "SentencePiece .model"},
        {tokbin, tokbin, "is not a llama2.c v0 checkpoint; it is a tokenizer: give it as --tokenizer"},
        {v1, tokbin, "it is a llama2.c version-1 checkpoint (magic ak42); export the model with llama2.c's export.py --version 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = fl_test_run_cli(out, sizeof out, "convert-llama2c --checkpoint %s --tokenizer %s --out %s/o%zu",
                                 cases[i].c, cases[i].t, tmp_dir, i);
        CHECK_MSG(rc == 2, "case %zu: exit %d: %s", i, rc, out);
        CHECK_STR_CONTAINS(out, cases[i].want);
        CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "case %zu: expected one line: %s", i, out);
    }
    cleanup();
}
