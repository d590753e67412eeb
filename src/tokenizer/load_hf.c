/* load_hf.c — reads a model folder's tokenizer files into an fl_tokenizer.
 *
 * Where transformers would look, in this order:
 *   tokenizer.json                       the full HF pipeline (model, normalizer, pre_tokenizer,
 *                                        post_processor, decoder, added_tokens)
 *   vocab.json + merges.txt              byte-level BPE; the pipeline follows tokenizer_config.json's
 *                                        tokenizer_class (Qwen2Tokenizer: NFC + Qwen2 regex,
 *                                        GPT2Tokenizer: GPT-2 regex), as transformers builds it
 *   tokenizer.model, original/tokenizer.model
 *                                        tiktoken ranks (`base64 rank` lines) = Llama-3: Llama-3
 *                                        regex, ignore_merges, BOS on encode; merges are derived
 *                                        from the ranks as transformers' TikTokenConverter does
 * plus tokenizer_config.json (added_tokens_decoder, bos/eos_token, chat_template) and
 * chat_template.jinja. Every field is validated; anything not implemented (Unigram/WordPiece,
 * Metaspace after another pre-tokenizer or beside a Prepend/Replace normalizer, regex Replace,
 * normalized or single_word added tokens, SentencePiece protobuf models) is an input error naming
 * file and field, never a silent approximation.
 * Not here: using the tables (tokenizer.c, bpe.c, ...).
 */
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"
#include "tokenizer/byte_level.h"
#include "io/file_util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Qwen2 (transformers tokenization_qwen2.py PRETOKENIZE_REGEX) and Llama-3 (llama-models
 * tokenizer.py pat_str) pre-tokenizer patterns. */
static const char qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char llama3_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* ============================== small helpers ============================== */

static char *str_dup(const char *s) {
    size_t n = strlen(s);
    char *d = fl_malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

/* Whether the folder has an entry of that name, of any kind: the reader then refuses a FIFO, a
 * device or a dangling link in one line ("cannot read PATH: a FIFO, not a regular file") instead
 * of the folder being taken as one without tokenizer files. */
static int file_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Reads a whole file (NUL-terminated); a file that cannot be opened or read is one line,
 * "cannot read FILE: reason". Every file of the tokenizer is read through here (JSON files are
 * parsed from the buffer), so size limits or regular-file checks belong in this one place. */
static int read_all(const char *path, char **out, size_t *len) {
    return fl_file_read_all(path, FL_FILE_TOKENIZER, out, len);
}

/* Parses a whole JSON file; strings may hold U+0000 (JSON_ALLOW_NUL). */
static int load_json(const char *path, json_t **out) {
    return fl_file_load_json(path, FL_FILE_TOKENIZER, JSON_ALLOW_NUL, out);
}

static int get_bool(json_t *obj, const char *key, bool dflt, bool *out, const char *file, const char *field) {
    json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return fl_input_error("%s: %s.%s: expected true/false", file, field, key);
    *out = json_is_true(v);
    return 0;
}

/* ============================== byte-level strings ============================== */

/* A vocab/merge string as stored: raw bytes for byte-level models, else as is. `tmp` holds
 * len + 1 bytes. Returns the stored bytes and their length in *out_len. */
static const char *stored_form(const fl_tokenizer *tok, const char *s, size_t len, char *tmp, size_t *out_len) {
    if (tok->pipe.byte_level && fl_byte_level_to_bytes(s, len, tmp, out_len)) return tmp;
    *out_len = len;
    return s;
}

/* ============================== shared model setup ============================== */

static int add_pre_step(fl_tokenizer *tok, int kind, const char *pattern, const char *file, const char *field) {
    if (tok->pipe.n_pre == FL_MAX_PRE_STEPS) return fl_input_error("%s: %s: more than %d pre-tokenizer steps", file, field, FL_MAX_PRE_STEPS);
    char where[512];
    snprintf(where, sizeof where, "%s: %s", file, field);
    fl_pre_step *st = &tok->pipe.pre[tok->pipe.n_pre];
    FL_TRY(fl_regex_compile(&st->regex, pattern, kind == FL_PRE_DIGITS, where));
    st->kind = kind;
    tok->pipe.n_pre++;
    return 0;
}

/* A split step on the literal text `lit` (Split's String pattern, Metaspace's replacement). */
static int add_literal_step(fl_tokenizer *tok, const char *lit, const char *file, const char *field) {
    if (strstr(lit, "\\E")) return fl_input_error("%s: %s: the literal '%s' contains \\E (not supported)", file, field, lit);
    char *q = fl_malloc(strlen(lit) + 5);
    sprintf(q, "\\Q%s\\E", lit);
    int rc = add_pre_step(tok, FL_PRE_SPLIT, q, file, field);
    free(q);
    return rc;
}

/* After the vocabulary is loaded: ids of the 256 single bytes (byte-level) or <0xNN> tokens. */
static int setup_byte_ids(fl_tokenizer *tok, const char *file) {
    fl_pipeline *p = &tok->pipe;
    for (int c = 0; c < 128; c++) {
        char ch = (char)c;
        p->ascii_ids[c] = fl_vocab_find(&tok->vocab, &ch, 1);
    }
    for (int b = 0; b < 256; b++) p->byte_ids[b] = -1;
    if (p->byte_level) {
        // a byte without a token (SmolLM2 lacks a few control bytes) is dropped on encode, as in HF
        int have = 0;
        for (int b = 0; b < 256; b++) {
            char c = (char)b;
            p->byte_ids[b] = fl_vocab_find(&tok->vocab, &c, 1);
            have += p->byte_ids[b] >= 0;
        }
        if (have < 128) return fl_input_error("%s: model.vocab: only %d of the 256 single-byte tokens (not a byte-level vocabulary)", file, have);
    } else if (p->byte_fallback) {
        for (int b = 0; b < 256; b++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", b);
            p->byte_ids[b] = fl_vocab_find(&tok->vocab, name, 6);
            if (p->byte_ids[b] < 0)
                return fl_input_error("%s: model.vocab: byte_fallback is set but token %s is missing", file, name);
        }
    }
    return 0;
}

/* Adds merge "left right" (strings in file form) with `rank`. */
static int add_merge(fl_tokenizer *tok, const char *l, size_t ll, const char *r, size_t rl, int32_t rank,
                     const char *file, const char *where) {
    char *tmp = fl_malloc(ll + rl + 2);
    size_t bl, br;
    const char *bs = stored_form(tok, l, ll, tmp, &bl);
    int32_t il = fl_vocab_find(&tok->vocab, bs, bl);
    char *cat = fl_malloc(bl + rl + 2);
    memcpy(cat, bs, bl);
    const char *rs = stored_form(tok, r, rl, tmp, &br);
    int32_t ir = fl_vocab_find(&tok->vocab, rs, br);
    memcpy(cat + bl, rs, br);
    int32_t im = fl_vocab_find(&tok->vocab, cat, bl + br);
    free(tmp);
    free(cat);
    if (il < 0 || ir < 0 || im < 0) {
        const char *which = il < 0 ? "left token" : ir < 0 ? "right token" : "merged token";
        return fl_input_error("%s: %s: merge '%.*s %.*s': %s is not in the vocabulary (vocab/merges mismatch)",
                              file, where, (int)ll, l, (int)rl, r, which);
    }
    fl_merges_add(&tok->merges, il, ir, rank, im);
    return 0;
}

static int parse_added_token(fl_tokenizer *tok, json_t *t, int32_t id, const char *file, const char *field) {
    json_t *content = json_object_get(t, "content");
    if (!json_is_string(content) || json_string_length(content) == 0)
        return fl_input_error("%s: %s: content: expected a non-empty string", file, field);
    bool special, lstrip, rstrip, normalized, single_word;
    FL_TRY(get_bool(t, "special", false, &special, file, field));
    FL_TRY(get_bool(t, "lstrip", false, &lstrip, file, field));
    FL_TRY(get_bool(t, "rstrip", false, &rstrip, file, field));
    FL_TRY(get_bool(t, "normalized", false, &normalized, file, field));
    FL_TRY(get_bool(t, "single_word", false, &single_word, file, field));
    if (normalized && !special)
        return fl_input_error("%s: %s: '%s' has normalized=true (matching on normalized text is not supported)", file,
                              field, json_string_value(content));
    if (single_word)
        return fl_input_error("%s: %s: '%s' has single_word=true (not supported)", file, field, json_string_value(content));
    if (fl_utf8_validate(json_string_value(content), json_string_length(content)) != json_string_length(content))
        return fl_input_error("%s: %s: content is not valid UTF-8", file, field);
    fl_added_tokens_add(&tok->added, json_string_value(content), json_string_length(content), id, special, lstrip, rstrip);
    return 0;
}

/* ============================== tokenizer.json ============================== */

static int parse_normalizer(fl_tokenizer *tok, json_t *n, const char *file, const char *field) {
    if (!n || json_is_null(n)) return 0;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return fl_input_error("%s: %s.type: expected a string", file, field);
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list)) return fl_input_error("%s: %s.normalizers: expected a list", file, field);
        size_t i;
        json_t *it;
        json_array_foreach(list, i, it) FL_TRY(parse_normalizer(tok, it, file, field));
        return 0;
    }
    if (!strcmp(type, "NFC")) { tok->pipe.nfc = true; return 0; }
    if (!strcmp(type, "Prepend")) {
        const char *s = json_string_value(json_object_get(n, "prepend"));
        if (!s) return fl_input_error("%s: %s.prepend: expected a string", file, field);
        free(tok->pipe.prepend);
        tok->pipe.prepend = str_dup(s);
        return 0;
    }
    if (!strcmp(type, "Replace")) {
        const char *from = json_string_value(json_object_get(json_object_get(n, "pattern"), "String"));
        const char *to = json_string_value(json_object_get(n, "content"));
        if (!from || !*from || !to)
            return fl_input_error("%s: %s: Replace needs pattern.String and content (regex patterns are not supported)", file, field);
        if (tok->pipe.replace_from) return fl_input_error("%s: %s: more than one Replace normalizer (not supported)", file, field);
        tok->pipe.replace_from = str_dup(from);
        tok->pipe.replace_to = str_dup(to);
        return 0;
    }
    return fl_input_error("%s: %s.type: '%s' is not supported (NFC, Prepend, Replace, Sequence)", file, field, type);
}

static int parse_pre_tokenizer(fl_tokenizer *tok, json_t *n, const char *file, const char *field) {
    if (!n || json_is_null(n)) return 0;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return fl_input_error("%s: %s.type: expected a string", file, field);
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "pretokenizers");
        if (!json_is_array(list)) return fl_input_error("%s: %s.pretokenizers: expected a list", file, field);
        size_t i;
        json_t *it;
        json_array_foreach(list, i, it) FL_TRY(parse_pre_tokenizer(tok, it, file, field));
        return 0;
    }
    if (!strcmp(type, "Split")) {
        json_t *pat = json_object_get(n, "pattern");
        const char *behavior = json_string_value(json_object_get(n, "behavior"));
        bool invert;
        FL_TRY(get_bool(n, "invert", false, &invert, file, field));
        int how = !behavior ? -1 : !strcmp(behavior, "Isolated") ? FL_SPLIT_ISOLATED : !strcmp(behavior, "MergedWithPrevious")
                  ? FL_SPLIT_MERGED_WITH_PREVIOUS : !strcmp(behavior, "MergedWithNext") ? FL_SPLIT_MERGED_WITH_NEXT : -1;
        if (how < 0 || invert)
            return fl_input_error("%s: %s: Split behavior '%s'%s is not supported (Isolated, MergedWithPrevious, "
                                  "MergedWithNext)", file, field, behavior ? behavior : "?", invert ? " with invert" : "");
        const char *re = json_string_value(json_object_get(pat, "Regex")), *lit = json_string_value(json_object_get(pat, "String"));
        if (!re && !lit) return fl_input_error("%s: %s.pattern: expected {\"Regex\": ...} or {\"String\": ...}", file, field);
        FL_TRY(re ? add_pre_step(tok, FL_PRE_SPLIT, re, file, field) : add_literal_step(tok, lit, file, field));
        tok->pipe.pre[tok->pipe.n_pre - 1].behavior = how;
        return 0;
    }
    if (!strcmp(type, "Metaspace")) {
        fl_pipeline *p = &tok->pipe;
        const char *rep = json_string_value(json_object_get(n, "replacement"));
        json_t *sv = json_object_get(n, "prepend_scheme"); // absent in files older than it: add_prefix_space
        const char *scheme = !sv || json_is_null(sv) ? NULL : json_is_string(sv) ? json_string_value(sv) : "";
        bool prefix, split;
        FL_TRY(get_bool(n, "add_prefix_space", true, &prefix, file, field));
        FL_TRY(get_bool(n, "split", true, &split, file, field));
        if (!rep || !*rep) return fl_input_error("%s: %s.replacement: expected a non-empty string", file, field);
        if (p->n_pre || p->meta_rep) return fl_input_error("%s: %s: Metaspace after another pre-tokenizer is not supported", file, field);
        p->meta_prepend = !scheme ? (prefix ? FL_META_ALWAYS : FL_META_NEVER) : !strcmp(scheme, "always") ? FL_META_ALWAYS
                          : !strcmp(scheme, "first") ? FL_META_FIRST : !strcmp(scheme, "never") ? FL_META_NEVER : -1;
        if (p->meta_prepend < 0)
            return fl_input_error("%s: %s.prepend_scheme: '%s' is not one of always, first, never", file, field, scheme);
        p->meta_rep = str_dup(rep);
        if (!split) return 0;
        FL_TRY(add_literal_step(tok, rep, file, field)); // split: "▁" opens each piece
        p->pre[p->n_pre - 1].behavior = FL_SPLIT_MERGED_WITH_NEXT;
        return 0;
    }
    if (!strcmp(type, "Digits")) {
        bool individual;
        FL_TRY(get_bool(n, "individual_digits", false, &individual, file, field));
        return add_pre_step(tok, FL_PRE_DIGITS, individual ? "\\p{N}" : "\\p{N}+", file, field);
    }
    if (!strcmp(type, "ByteLevel")) {
        bool prefix, use_regex;
        FL_TRY(get_bool(n, "add_prefix_space", false, &prefix, file, field));
        FL_TRY(get_bool(n, "use_regex", true, &use_regex, file, field));
        if (prefix) return fl_input_error("%s: %s: ByteLevel add_prefix_space=true is not supported", file, field);
        tok->pipe.byte_level = true;
        if (use_regex) return add_pre_step(tok, FL_PRE_BYTELEVEL_REGEX, fl_gpt2_pattern, file, field);
        return 0;
    }
    return fl_input_error("%s: %s.type: '%s' is not supported (Split, Metaspace, Digits, ByteLevel, Sequence)", file,
                          field, type);
}

static int parse_post_processor(fl_tokenizer *tok, json_t *n, const char *file, const char *field) {
    if (!n || json_is_null(n)) return 0;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return fl_input_error("%s: %s.type: expected a string", file, field);
    if (!strcmp(type, "ByteLevel")) return 0; // offsets only
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "processors");
        if (!json_is_array(list)) return fl_input_error("%s: %s.processors: expected a list", file, field);
        size_t i;
        json_t *it;
        json_array_foreach(list, i, it) FL_TRY(parse_post_processor(tok, it, file, field));
        return 0;
    }
    if (strcmp(type, "TemplateProcessing"))
        return fl_input_error("%s: %s.type: '%s' is not supported (TemplateProcessing, ByteLevel, Sequence)", file, field, type);
    json_t *single = json_object_get(n, "single"), *specials = json_object_get(n, "special_tokens");
    if (!json_is_array(single)) return fl_input_error("%s: %s.single: expected a list", file, field);
    fl_pipeline *p = &tok->pipe;
    p->n_post_prefix = p->n_post_suffix = 0;
    int seen_seq = 0;
    size_t i;
    json_t *it;
    json_array_foreach(single, i, it) {
        if (json_object_get(it, "Sequence")) { seen_seq = 1; continue; }
        const char *name = json_string_value(json_object_get(json_object_get(it, "SpecialToken"), "id"));
        if (!name) return fl_input_error("%s: %s.single[%zu]: expected SpecialToken or Sequence", file, field, i);
        json_t *ids = json_object_get(json_object_get(specials, name), "ids");
        if (!json_is_array(ids) || json_array_size(ids) != 1 || !json_is_integer(json_array_get(ids, 0)))
            return fl_input_error("%s: %s.special_tokens.%s.ids: expected one integer id", file, field, name);
        int32_t id = (int32_t)json_integer_value(json_array_get(ids, 0));
        if (seen_seq) {
            if (p->n_post_suffix == 4) return fl_input_error("%s: %s.single: too many special tokens", file, field);
            p->post_suffix[p->n_post_suffix++] = id;
        } else {
            if (p->n_post_prefix == 4) return fl_input_error("%s: %s.single: too many special tokens", file, field);
            p->post_prefix[p->n_post_prefix++] = id;
        }
    }
    return 0;
}

static int parse_decoder(fl_tokenizer *tok, json_t *n, const char *file, const char *field) {
    if (!n || json_is_null(n)) return 0;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return fl_input_error("%s: %s.type: expected a string", file, field);
    fl_pipeline *p = &tok->pipe;
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "decoders");
        if (!json_is_array(list)) return fl_input_error("%s: %s.decoders: expected a list", file, field);
        size_t i;
        json_t *it;
        json_array_foreach(list, i, it) FL_TRY(parse_decoder(tok, it, file, field));
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) {
        if (!p->byte_level) return fl_input_error("%s: %s: ByteLevel decoder without a ByteLevel pre-tokenizer", file, field);
        return 0;
    }
    if (p->byte_level) return fl_input_error("%s: %s.type: '%s' with a byte-level model is not supported", file, field, type);
    if (!strcmp(type, "Replace")) {
        const char *from = json_string_value(json_object_get(json_object_get(n, "pattern"), "String"));
        const char *to = json_string_value(json_object_get(n, "content"));
        if (!from || !*from || !to || p->dec_replace_from)
            return fl_input_error("%s: %s: one Replace with pattern.String and content is supported", file, field);
        p->dec_replace_from = str_dup(from);
        p->dec_replace_to = str_dup(to);
        return 0;
    }
    if (!strcmp(type, "ByteFallback")) { p->dec_byte_fallback = true; return 0; }
    if (!strcmp(type, "Fuse")) return 0;
    if (!strcmp(type, "Strip")) {
        const char *content = json_string_value(json_object_get(n, "content"));
        json_t *start = json_object_get(n, "start"), *stop = json_object_get(n, "stop");
        if (!content || strcmp(content, " ") || !json_is_integer(start) || json_integer_value(stop) != 0)
            return fl_input_error("%s: %s: Strip is supported for content ' ' with stop 0", file, field);
        p->dec_strip_left = (int)json_integer_value(start);
        return 0;
    }
    if (!strcmp(type, "Metaspace")) {
        const char *rep = json_string_value(json_object_get(n, "replacement"));
        const char *scheme = json_string_value(json_object_get(n, "prepend_scheme"));
        if (!rep || p->dec_replace_from) return fl_input_error("%s: %s: Metaspace needs replacement", file, field);
        p->dec_replace_from = str_dup(rep);
        p->dec_replace_to = str_dup(" ");
        p->dec_strip_left = scheme && !strcmp(scheme, "never") ? 0 : 1;
        return 0;
    }
    return fl_input_error("%s: %s.type: '%s' is not supported (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)",
                          file, field, type);
}

static int parse_bpe_model(fl_tokenizer *tok, json_t *m, const char *file) {
    if (!json_is_object(m)) return fl_input_error("%s: model: expected an object", file);
    const char *type = json_string_value(json_object_get(m, "type"));
    if (type && strcmp(type, "BPE")) return fl_input_error("%s: model.type: '%s' is not supported (BPE only)", file, type);
    if (!type && !json_object_get(m, "merges")) return fl_input_error("%s: model.type: missing (and no merges: not a BPE model)", file);
    json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges");
    if (!json_is_object(vocab) || json_object_size(vocab) == 0) return fl_input_error("%s: model.vocab: expected a non-empty object", file);
    if (!json_is_array(merges)) return fl_input_error("%s: model.merges: expected a list", file);
    fl_pipeline *p = &tok->pipe;
    bool bf, fuse, ignore;
    FL_TRY(get_bool(m, "byte_fallback", false, &bf, file, "model"));
    FL_TRY(get_bool(m, "fuse_unk", false, &fuse, file, "model"));
    FL_TRY(get_bool(m, "ignore_merges", false, &ignore, file, "model"));
    p->byte_fallback = bf;
    p->fuse_unk = fuse;
    p->ignore_merges = ignore;
    json_t *dropout = json_object_get(m, "dropout");
    if (dropout && !json_is_null(dropout)) return fl_input_error("%s: model.dropout: BPE dropout is not supported (expected null)", file);
    const char *prefix = json_string_value(json_object_get(m, "continuing_subword_prefix"));
    const char *suffix = json_string_value(json_object_get(m, "end_of_word_suffix"));
    if ((prefix && *prefix) || (suffix && *suffix))
        return fl_input_error("%s: model: continuing_subword_prefix / end_of_word_suffix are not supported", file);
    const char *key;
    json_t *val;
    char *tmp = NULL;
    size_t tmp_cap = 0;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) > 0x7FFFFFF) {
            free(tmp);
            return fl_input_error("%s: model.vocab: '%s': expected an id in 0..134217727", file, key);
        }
        size_t kl = strlen(key), bl;
        if (kl + 1 > tmp_cap) { free(tmp); tmp_cap = kl + 64; tmp = fl_malloc(tmp_cap); }
        const char *b = stored_form(tok, key, kl, tmp, &bl);
        if (fl_vocab_set(&tok->vocab, (int32_t)json_integer_value(val), b, bl)) {
            free(tmp);
            return fl_input_error("%s: model.vocab: id %lld is used by two tokens", file, (long long)json_integer_value(val));
        }
    }
    free(tmp);
    fl_merges_init(&tok->merges, json_array_size(merges));
    size_t i;
    json_t *it;
    json_array_foreach(merges, i, it) {
        char where[64];
        snprintf(where, sizeof where, "model.merges[%zu]", i);
        if (json_is_string(it)) {
            const char *s = json_string_value(it), *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ')) return fl_input_error("%s: %s: expected \"left right\", got '%s'", file, where, s);
            FL_TRY(add_merge(tok, s, (size_t)(sp - s), sp + 1, strlen(sp + 1), (int32_t)i, file, where));
        } else if (json_is_array(it) && json_array_size(it) == 2 && json_is_string(json_array_get(it, 0)) &&
                   json_is_string(json_array_get(it, 1))) {
            json_t *a = json_array_get(it, 0), *b = json_array_get(it, 1);
            FL_TRY(add_merge(tok, json_string_value(a), json_string_length(a), json_string_value(b), json_string_length(b),
                             (int32_t)i, file, where));
        } else {
            return fl_input_error("%s: %s: expected \"left right\" or [left, right]", file, where);
        }
    }
    json_t *unk = json_object_get(m, "unk_token");
    p->unk_id = -1;
    if (json_is_string(unk)) {
        p->unk_id = fl_vocab_find(&tok->vocab, json_string_value(unk), json_string_length(unk));
        if (p->unk_id < 0) return fl_input_error("%s: model.unk_token: '%s' is not in the vocabulary", file, json_string_value(unk));
    }
    return setup_byte_ids(tok, file);
}

static int load_tokenizer_json(fl_tokenizer *tok, const char *path) {
    json_t *root;
    FL_TRY(load_json(path, &root));
    int rc = 0;
    if (!json_is_object(root)) { rc = fl_input_error("%s: expected a JSON object at top level", path); goto done; }
    json_t *model = json_object_get(root, "model");
    if (!model) { rc = fl_input_error("%s: model: missing", path); goto done; }
    // pre_tokenizer first: it decides whether vocab strings are byte-level
    if ((rc = parse_pre_tokenizer(tok, json_object_get(root, "pre_tokenizer"), path, "pre_tokenizer"))) goto done;
    if ((rc = parse_normalizer(tok, json_object_get(root, "normalizer"), path, "normalizer"))) goto done;
    if (tok->pipe.meta_rep && (tok->pipe.prepend || tok->pipe.replace_from || tok->pipe.byte_level) &&
        (rc = fl_input_error("%s: pre_tokenizer: Metaspace beside ByteLevel or a Prepend/Replace normalizer is not supported", path))) goto done;
    if ((rc = parse_decoder(tok, json_object_get(root, "decoder"), path, "decoder"))) goto done;
    if ((rc = parse_post_processor(tok, json_object_get(root, "post_processor"), path, "post_processor"))) goto done;
    if ((rc = parse_bpe_model(tok, model, path))) goto done;
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_array(added)) { rc = fl_input_error("%s: added_tokens: expected a list", path); goto done; }
    size_t i;
    json_t *it;
    json_array_foreach(added, i, it) {
        char field[64];
        snprintf(field, sizeof field, "added_tokens[%zu]", i);
        json_t *id = json_object_get(it, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > 0x7FFFFFF) {
            rc = fl_input_error("%s: %s.id: expected a non-negative integer", path, field);
            goto done;
        }
        if ((rc = parse_added_token(tok, it, (int32_t)json_integer_value(id), path, field))) goto done;
    }
    {
        const char *what = tok->pipe.byte_level ? "byte-level BPE" : tok->pipe.byte_fallback ? "SentencePiece-style BPE with byte fallback" : "BPE";
        char kind[128];
        snprintf(kind, sizeof kind, "%s (tokenizer.json)", what);
        tok->kind = str_dup(kind);
    }
done:
    json_decref(root);
    return rc;
}

/* ============================== vocab.json + merges.txt ============================== */

static int load_vocab_merges(fl_tokenizer *tok, const char *vocab_path, const char *merges_path, json_t *cfg,
                             const char *cfg_path) {
    if (!cfg) return fl_input_error("%s: missing (needed with vocab.json + merges.txt to know the tokenizer class)", cfg_path);
    const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
    if (!cls) return fl_input_error("%s: tokenizer_class: expected a string", cfg_path);
    tok->pipe.byte_level = true;
    if (!strcmp(cls, "Qwen2Tokenizer") || !strcmp(cls, "Qwen2TokenizerFast")) {
        tok->pipe.nfc = true;
        FL_TRY(add_pre_step(tok, FL_PRE_SPLIT, qwen2_pattern, cfg_path, "tokenizer_class Qwen2Tokenizer"));
    } else if (!strcmp(cls, "GPT2Tokenizer") || !strcmp(cls, "GPT2TokenizerFast")) {
        bool prefix;
        FL_TRY(get_bool(cfg, "add_prefix_space", false, &prefix, cfg_path, "config"));
        if (prefix) return fl_input_error("%s: add_prefix_space: true is not supported", cfg_path);
        FL_TRY(add_pre_step(tok, FL_PRE_BYTELEVEL_REGEX, fl_gpt2_pattern, cfg_path, "tokenizer_class GPT2Tokenizer"));
    } else {
        return fl_input_error("%s: tokenizer_class: '%s' is not known for vocab.json + merges.txt (known: Qwen2Tokenizer, GPT2Tokenizer)",
                              cfg_path, cls);
    }
    json_t *vocab;
    FL_TRY(load_json(vocab_path, &vocab));
    if (!json_is_object(vocab) || json_object_size(vocab) == 0) {
        json_decref(vocab);
        return fl_input_error("%s: expected a non-empty object {token: id}", vocab_path);
    }
    const char *key;
    json_t *val;
    char *tmp = NULL;
    size_t tmp_cap = 0;
    int rc = 0;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) > 0x7FFFFFF) {
            rc = fl_input_error("%s: '%s': expected an id in 0..134217727", vocab_path, key);
            break;
        }
        size_t kl = strlen(key), bl;
        if (kl + 1 > tmp_cap) { free(tmp); tmp_cap = kl + 64; tmp = fl_malloc(tmp_cap); }
        const char *b = stored_form(tok, key, kl, tmp, &bl);
        if (fl_vocab_set(&tok->vocab, (int32_t)json_integer_value(val), b, bl)) {
            rc = fl_input_error("%s: id %lld is used by two tokens", vocab_path, (long long)json_integer_value(val));
            break;
        }
    }
    free(tmp);
    json_decref(vocab);
    FL_TRY(rc);
    char *text;
    size_t len;
    FL_TRY(read_all(merges_path, &text, &len));
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    fl_merges_init(&tok->merges, lines);
    int32_t rank = 0;
    size_t line_no = 0;
    for (char *line = text; line < text + len && !rc;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        char *end = nl ? nl : text + len;
        line_no++;
        size_t ll = (size_t)(end - line);
        if (ll && line[ll - 1] == '\r') ll--;
        if (ll && !(line_no == 1 && !strncmp(line, "#version", 8))) {
            char *sp = memchr(line, ' ', ll);
            char where[32];
            snprintf(where, sizeof where, "line %zu", line_no);
            if (!sp || memchr(sp + 1, ' ', ll - (size_t)(sp + 1 - line)))
                rc = fl_input_error("%s: %s: expected \"left right\"", merges_path, where);
            else
                rc = add_merge(tok, line, (size_t)(sp - line), sp + 1, ll - (size_t)(sp + 1 - line), rank++, merges_path, where);
        }
        line = end + 1;
    }
    free(text);
    FL_TRY(rc);
    FL_TRY(setup_byte_ids(tok, vocab_path));
    tok->pipe.unk_id = -1;
    bool add_bos;
    FL_TRY(get_bool(cfg, "add_bos_token", false, &add_bos, cfg_path, "config"));
    if (add_bos) tok->pipe.n_post_prefix = -1; // resolved to bos_id after the config is read
    char kind[128];
    snprintf(kind, sizeof kind, "byte-level BPE (vocab.json + merges.txt, %s)", cls);
    tok->kind = str_dup(kind);
    return 0;
}

/* ============================== tiktoken (Llama-3) ============================== */

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes base64 s[0, n) into out; returns the byte count or -1. */
static long b64_decode(const char *s, size_t n, unsigned char *out) {
    if (n % 4) return -1;
    long o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) { v[k] = 0; pad++; continue; }
            if (pad) return -1;
            v[k] = b64_value(c);
            if (v[k] < 0) return -1;
        }
        uint32_t w = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) | ((uint32_t)v[2] << 6) | (uint32_t)v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2) out[o++] = (unsigned char)(w >> 8);
        if (pad < 1) out[o++] = (unsigned char)w;
    }
    return o;
}

static int is_tiktoken(const char *text, size_t len) {
    const char *nl = memchr(text, '\n', len);
    size_t ll = nl ? (size_t)(nl - text) : len;
    const char *sp = memchr(text, ' ', ll);
    if (!sp || sp == text) return 0;
    for (const char *c = text; c < sp; c++)
        if (b64_value((unsigned char)*c) < 0 && *c != '=') return 0;
    for (const char *c = sp + 1; c < text + ll; c++)
        if (*c < '0' || *c > '9') return 0;
    return sp + 1 < text + ll;
}

typedef struct { int32_t left, right; } pair32;

static int cmp_pair(const void *a, const void *b) {
    const pair32 *x = a, *y = b;
    if (x->left != y->left) return x->left < y->left ? -1 : 1;
    return x->right < y->right ? -1 : x->right > y->right;
}

static int load_tiktoken(fl_tokenizer *tok, const char *path, const char *text, size_t len) {
    fl_pipeline *p = &tok->pipe;
    p->byte_level = true;
    p->ignore_merges = true;
    p->unk_id = -1;
    FL_TRY(add_pre_step(tok, FL_PRE_SPLIT, llama3_pattern, path, "Llama-3 pattern"));
    unsigned char *buf = fl_malloc(len + 4);
    size_t line_no = 0;
    int rc = 0;
    for (const char *line = text; line < text + len && !rc;) {
        const char *nl = memchr(line, '\n', (size_t)(text + len - line));
        const char *end = nl ? nl : text + len;
        line_no++;
        size_t ll = (size_t)(end - line);
        if (ll && line[ll - 1] == '\r') ll--;
        if (ll) {
            const char *sp = memchr(line, ' ', ll);
            long n = sp ? b64_decode(line, (size_t)(sp - line), buf) : -1;
            char *rank_end = NULL;
            long long rank = sp ? strtoll(sp + 1, &rank_end, 10) : -1;
            if (n <= 0) rc = fl_input_error("%s: line %zu: expected `base64 rank` (bad base64)", path, line_no);
            else if (rank < 0 || rank > 0x7FFFFFF || rank_end != line + ll)
                rc = fl_input_error("%s: line %zu: expected `base64 rank` (bad rank)", path, line_no);
            else if (fl_vocab_set(&tok->vocab, (int32_t)rank, (const char *)buf, (size_t)n))
                rc = fl_input_error("%s: line %zu: rank %lld is used twice", path, line_no, rank);
        }
        line = end + 1;
    }
    free(buf);
    FL_TRY(rc);
    // Merges as transformers' TikTokenConverter derives them: for each token in rank order, every
    // split into two tokens, ordered by (left rank, right rank); merge rank = position in that list.
    fl_vocab *v = &tok->vocab;
    fl_merges_init(&tok->merges, (size_t)v->n_ids * 2);
    pair32 *pairs = fl_malloc(256 * sizeof *pairs);
    int32_t rank = 0;
    for (int32_t id = 0; id < v->n_ids; id++) {
        int32_t tl;
        const char *t = fl_vocab_bytes(v, id, &tl);
        if (!t || tl < 2 || tl > 256) continue;
        int np = 0;
        for (int32_t k = 1; k < tl; k++) {
            int32_t l = fl_vocab_find(v, t, (size_t)k), r = fl_vocab_find(v, t + k, (size_t)(tl - k));
            if (l >= 0 && r >= 0) pairs[np++] = (pair32){l, r};
        }
        qsort(pairs, (size_t)np, sizeof *pairs, cmp_pair);
        for (int k = 0; k < np; k++) fl_merges_add(&tok->merges, pairs[k].left, pairs[k].right, rank++, id);
    }
    free(pairs);
    FL_TRY(setup_byte_ids(tok, path));
    p->n_post_prefix = -1; // BOS, resolved once bos_token is known
    tok->kind = str_dup("byte-level BPE (tiktoken tokenizer.model, Llama-3)");
    return 0;
}

/* ============================== tokenizer_config.json ============================== */

/* bos_token / eos_token: a string or {"content": ...}; returns its id, -1 when null/absent. */
static int config_token_id(fl_tokenizer *tok, json_t *cfg, const char *key, const char *path, int32_t *out) {
    *out = -1;
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) return 0;
    if (json_is_object(v)) v = json_object_get(v, "content");
    if (!json_is_string(v)) return fl_input_error("%s: %s: expected a string or {\"content\": ...}", path, key);
    *out = fl_tokenizer_token_to_id(tok, json_string_value(v));
    if (*out < 0) return fl_input_error("%s: %s: '%s' is not a token of this tokenizer", path, key, json_string_value(v));
    return 0;
}

static int apply_config(fl_tokenizer *tok, json_t *cfg, const char *path) {
    json_t *dec = json_object_get(cfg, "added_tokens_decoder");
    if (dec && !json_is_object(dec)) return fl_input_error("%s: added_tokens_decoder: expected an object", path);
    const char *key;
    json_t *val;
    json_object_foreach(dec, key, val) {
        char *end;
        long id = strtol(key, &end, 10);
        if (*end || id < 0 || id > 0x7FFFFFF) return fl_input_error("%s: added_tokens_decoder: key '%s' is not an id", path, key);
        char field[64];
        snprintf(field, sizeof field, "added_tokens_decoder.%ld", id);
        FL_TRY(parse_added_token(tok, val, (int32_t)id, path, field));
    }
    fl_added_tokens_finish(&tok->added);
    FL_TRY(config_token_id(tok, cfg, "bos_token", path, &tok->bos_id));
    FL_TRY(config_token_id(tok, cfg, "eos_token", path, &tok->eos_id));
    json_t *tpl = json_object_get(cfg, "chat_template");
    if (json_is_string(tpl) && !tok->chat_template) tok->chat_template = str_dup(json_string_value(tpl));
    else if (json_is_array(tpl) && !tok->chat_template) {
        size_t i;
        json_t *it;
        json_array_foreach(tpl, i, it) {
            const char *name = json_string_value(json_object_get(it, "name"));
            const char *t = json_string_value(json_object_get(it, "template"));
            if (name && t && !strcmp(name, "default")) tok->chat_template = str_dup(t);
        }
    } else if (tpl && !json_is_null(tpl) && !json_is_string(tpl) && !json_is_array(tpl)) {
        return fl_input_error("%s: chat_template: expected a string or a list of {name, template}", path);
    }
    return 0;
}

/* ============================== entry point ============================== */

static int load_dir(fl_tokenizer *tok, const char *dir) {
    char *cfg_path = fl_path_join(dir, "tokenizer_config.json");
    char *tj = fl_path_join(dir, "tokenizer.json"), *vj = fl_path_join(dir, "vocab.json"), *mt = fl_path_join(dir, "merges.txt");
    char *tm = fl_path_join(dir, "tokenizer.model"), *otm = fl_path_join(dir, "original/tokenizer.model");
    char *jinja = fl_path_join(dir, "chat_template.jinja");
    json_t *cfg = NULL;
    int rc = 0;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) { rc = fl_input_error("%s: not a directory", dir); goto done; }
    if (file_exists(cfg_path) && (rc = load_json(cfg_path, &cfg))) goto done;
    if (cfg && !json_is_object(cfg)) { rc = fl_input_error("%s: expected a JSON object at top level", cfg_path); goto done; }
    if (file_exists(jinja)) {
        size_t len;
        if ((rc = read_all(jinja, &tok->chat_template, &len))) goto done;
    }
    if (file_exists(tj)) {
        rc = load_tokenizer_json(tok, tj);
    } else if (file_exists(vj) || file_exists(mt)) {
        if (!file_exists(vj) || !file_exists(mt))
            rc = fl_input_error("%s: missing (vocab.json and merges.txt go together)", file_exists(vj) ? mt : vj);
        else
            rc = load_vocab_merges(tok, vj, mt, cfg, cfg_path);
    } else if (file_exists(tm) || file_exists(otm)) {
        const char *path = file_exists(tm) ? tm : otm;
        char *text;
        size_t len;
        if ((rc = read_all(path, &text, &len))) goto done;
        if (!is_tiktoken(text, len))
            rc = fl_input_error("%s: not a tiktoken file (SentencePiece protobuf models are not supported: use tokenizer.json)", path);
        else if (!cfg)
            rc = fl_input_error("%s: missing (a tiktoken tokenizer.model needs it for the special tokens)", cfg_path);
        else
            rc = load_tiktoken(tok, path, text, len);
        free(text);
    } else {
        // e.g. an instruct folder holding only configs, its tokenizer left in the base model's folder
        rc = fl_input_error("%s: no tokenizer files: looked for tokenizer.json, vocab.json + merges.txt, tokenizer.model "
                            "and original/tokenizer.model in this folder%s", dir,
                            cfg ? " (tokenizer_config.json alone has no vocabulary: copy the tokenizer files of the "
                                  "base model into it)" : "");
    }
    if (rc) goto done;
    if (cfg) rc = apply_config(tok, cfg, cfg_path);
    else fl_added_tokens_finish(&tok->added);
    if (rc) goto done;
    if (tok->pipe.n_post_prefix < 0) { // BOS requested by config / Llama-3 convention
        if (tok->bos_id < 0) { rc = fl_input_error("%s: bos_token: needed (add_bos_token / Llama-3) but not set", cfg_path); goto done; }
        tok->pipe.post_prefix[0] = tok->bos_id;
        tok->pipe.n_post_prefix = 1;
    }
    for (int i = 0; i < tok->pipe.n_post_prefix; i++)
        if (tok->pipe.post_prefix[i] < 0 || tok->pipe.post_prefix[i] >= fl_tokenizer_vocab_size(tok)) {
            rc = fl_input_error("%s: post_processor: special token id %d is outside the vocabulary", tj, tok->pipe.post_prefix[i]);
            goto done;
        }
    if (tok->bos_id < 0 && tok->pipe.n_post_prefix > 0) tok->bos_id = tok->pipe.post_prefix[0];
done:
    json_decref(cfg);
    free(cfg_path); free(tj); free(vj); free(mt); free(tm); free(otm); free(jinja);
    return rc;
}

int fl_tokenizer_load(fl_tokenizer **out, const char *model_dir) {
    *out = NULL;
    fl_tokenizer *tok = fl_calloc(1, sizeof *tok);
    tok->bos_id = tok->eos_id = -1;
    tok->pipe.unk_id = -1;
    tok->model_dir = str_dup(model_dir);
    int rc = load_dir(tok, model_dir);
    if (rc) { fl_tokenizer_free(tok); return rc; }
    fl_word_cache_init(&tok->cache, 1 << 16);
    *out = tok;
    return 0;
}
