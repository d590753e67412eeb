/* gguf_vocab.c — a model folder's tokenizer as GGUF tokenizer.* metadata, the way llama.cpp's
 * convert_hf_to_gguf.py writes it, so llama.cpp tokenizes with no Hugging Face file:
 *
 *   byte-level BPE (Qwen2/2.5, SmolLM2, Llama-3): tokenizer.ggml.model "gpt2", tokens in the
 *     GPT-2 byte-to-unicode spelling, merges "left right" in rank order, tokenizer.ggml.pre = the
 *     pre-tokenizer name llama.cpp keys its regexes on — found as the converter finds it: the
 *     sha256 of the ids of a fixed check text (get_vocab_base_pre);
 *   SentencePiece-style BPE (Llama-2, TinyLlama, llama2.c): model "llama", pre "default", the
 *     pieces, and scores. llama.cpp's SPM tokenizer merges the adjacent pair whose concatenation has
 *     the highest score; HF's tokenizer.json ranks its merges by that same score, so a piece's score
 *     here is -(1 + rank of the first merge that makes it): the values differ from SentencePiece's
 *     own (tokenizer.json does not keep them) but their order is the same — for all 29,612
 *     merge-made pieces of TinyLlama's tokenizer.model — and only the order decides a merge.
 *     Single characters never result from a merge and get the lowest score.
 *
 * Token types as the converter assigns them: added special tokens (or tokens that look special,
 * "<|...|>") CONTROL, other added tokens USER_DEFINED, <0xNN> byte pieces BYTE, the unk piece
 * UNKNOWN, ids the tokenizer lacks up to config.json's vocab_size "[PAD<id>]" UNUSED. Special ids
 * as gguf-py's SpecialVocab finds them: tokenizer_config.json's <x>_token, then config.json's
 * <x>_token_id. add_bos/add_eos: what the tokenizer's post-processor does on encode.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/strbuf.h"
#include "export/export_internal.h"
#include "io/file_util.h"
#include "tokenizer/tokenizer_vocab.h"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

/* ---- tokenizer.ggml.pre -------------------------------------------------------------------- */

/* convert_hf_to_gguf.py's chktxt, byte for byte (431 bytes of UTF-8). */
static const char check_text[] =
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\xf0\x9f\x9a\x80 (normal) \xf0\x9f\x98\xb6\xe2"
    "\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f (multiple emojis concatenated) \xe2\x9c\x85 \xf0\x9f\xa6"
    "\x99\xf0\x9f\xa6\x99 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 \xe1\x9e\x80"
    "\xe1\x9e\xb6\xe1\x9e\x93\xe1\x9f\x8b\xe1\x9e\x8f\xe1\x9f\x82\xe1\x9e\x96\xe1\x9e\xb7\xe1\x9e"
    "\x9f\xe1\x9f\x81\xe1\x9e\x9f\xe1\x9e\xa2\xe1\x9e\xb6\xe1\x9e\x85\xf0\x9f\x98\x81 ?\xe6\x88\x91"
    "\xe6\x83\xb3\xe5\x9c\xa8" "apple\xe5\xb7\xa5\xe4\xbd\x9c" "1314151\xe5\xa4\xa9\xef\xbd\x9e ----"
    "--======= \xd0\xbd\xd0\xb5\xd1\x89\xd0\xbe \xd0\xbd\xd0\xb0 \xd0\x91\xd1\x8a\xd0\xbb\xd0\xb3"
    "\xd0\xb0\xd1\x80\xd1\x81\xd0\xba\xd0\xb8 ''''''```````\"\"\"\"......!!!!!!?????? I've been 'tol"
    "d he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL";

/* Hashes from convert_hf_to_gguf.py for the pre-tokenizers of the models fastlora trains. */
static const struct { const char *sha256, *name; } known_pre[] = {
    {"e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea", "qwen2"},     /* Qwen1.5 / Qwen2 / Qwen2.5 */
    {"d4540891389ea895b53b399da6ac824becc30f2fba0e9ddbb98f92e55ca0e97c", "qwen2"},     /* Qwen3-Embedding */
    {"855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249", "smollm"},    /* SmolLM / SmolLM2 */
    {"0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5", "llama-bpe"}, /* Llama-3.x */
    {"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454", "gpt-2"},     /* GPT-2 */
    {"63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e", "tekken"},    /* Mistral Nemo (Tekken) */
};

const char *fl_gguf_pre_tokenizer_name(struct fl_tokenizer *tok, char hash_hex[65]) {
    hash_hex[0] = 0;
    fl_token_ids ids = {0};
    if (fl_tokenizer_encode(tok, check_text, sizeof check_text - 1, FL_ENCODE_ADD_SPECIAL, &ids)) return NULL;
    /* str() of a Python list of ints: "[1, 2, 3]" */
    fl_strbuf s = {0};
    fl_strbuf_append_str(&s, "[");
    char num[16];
    for (size_t i = 0; i < ids.n; i++) {
        snprintf(num, sizeof num, "%s%d", i ? ", " : "", ids.ids[i]);
        fl_strbuf_append_str(&s, num);
    }
    fl_strbuf_append_str(&s, "]");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    int ok = EVP_Digest(s.p, s.n, md, &md_len, EVP_sha256(), NULL) == 1 && md_len == 32;
    free(s.p);
    fl_token_ids_free(&ids);
    if (!ok) return NULL;
    for (int i = 0; i < 32; i++) snprintf(hash_hex + 2 * i, 3, "%02x", md[i]);
    for (size_t i = 0; i < sizeof known_pre / sizeof known_pre[0]; i++)
        if (!strcmp(hash_hex, known_pre[i].sha256)) return known_pre[i].name;
    return NULL;
}

/* ---- tokens -------------------------------------------------------------------------------- */

/* convert_hf_to_gguf.py's does_token_look_special. */
static int looks_special(const char *t, size_t n) {
#define STARTS(p) (n >= sizeof(p) - 1 && !memcmp(t, p, sizeof(p) - 1))
#define ENDS(p) (n >= sizeof(p) - 1 && !memcmp(t + n - (sizeof(p) - 1), p, sizeof(p) - 1))
#define IS(p) (n == sizeof(p) - 1 && !memcmp(t, p, n))
    return IS("<pad>") || IS("<mask>") || IS("<2mass>") || IS("[@BOS@]") || (STARTS("<|") && ENDS("|>")) ||
           (STARTS("<\xef\xbd\x9c") && ENDS("\xef\xbd\x9c>")) || (STARTS("<unused") && ENDS(">"));
#undef STARTS
#undef ENDS
#undef IS
}

/* A user-defined SentencePiece token: its "▁" are pre-normalized to spaces (converter). */
static size_t unescape_spaces(char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n && (unsigned char)s[i] == 0xe2 && (unsigned char)s[i + 1] == 0x96 && (unsigned char)s[i + 2] == 0x81) {
            s[k++] = ' ';
            i += 2;
        } else {
            s[k++] = s[i];
        }
    }
    s[k] = 0;
    return k;
}

typedef struct {
    char **text;    /* (V,) */
    size_t *len;    /* (V,) */
    int32_t *type;  /* (V,) */
    float *score;   /* (V,) SentencePiece only */
} vocab_table;

static void vocab_table_free(vocab_table *t, int32_t V) {
    for (int32_t i = 0; t->text && i < V; i++) free(t->text[i]);
    free(t->text);
    free(t->len);
    free(t->type);
    free(t->score);
}

static void build_tokens(fl_tokenizer *tok, int32_t V, int spm, vocab_table *t) {
    t->text = fl_calloc((size_t)V, sizeof *t->text);
    t->len = fl_calloc((size_t)V, sizeof *t->len);
    t->type = fl_calloc((size_t)V, sizeof *t->type);
    int32_t nt = fl_tokenizer_vocab_size(tok);
    for (int32_t id = 0; id < V; id++) {
        fl_token_kind kind = id < nt ? fl_tokenizer_token_kind(tok, id) : FL_TOKEN_ABSENT;
        t->text[id] = kind == FL_TOKEN_ABSENT ? NULL : fl_tokenizer_token_text(tok, id, &t->len[id]);
        if (!t->text[id]) {
            char pad[32];
            int n = snprintf(pad, sizeof pad, "[PAD%d]", id);
            t->text[id] = strdup(pad);
            t->len[id] = (size_t)n;
            t->type[id] = TT_UNUSED;
            continue;
        }
        switch (kind) {
        case FL_TOKEN_SPECIAL: t->type[id] = TT_CONTROL; break;
        case FL_TOKEN_ADDED:
            if (looks_special(t->text[id], t->len[id])) t->type[id] = TT_CONTROL;
            else {
                t->type[id] = TT_USER_DEFINED;
                if (spm) t->len[id] = unescape_spaces(t->text[id], t->len[id]);
            }
            break;
        case FL_TOKEN_BYTE: t->type[id] = spm ? TT_BYTE : TT_NORMAL; break;
        case FL_TOKEN_UNKNOWN: t->type[id] = spm ? TT_UNKNOWN : TT_NORMAL; break;
        default: t->type[id] = TT_NORMAL; break;
        }
    }
    if (!spm) return;
    /* scores: -(1 + rank of the first merge making the piece); control/added/unused -1000 (converter) */
    int32_t *left, *right, *merged;
    size_t nm;
    fl_tokenizer_merges(tok, &left, &right, &merged, &nm);
    t->score = fl_malloc(sizeof *t->score * (size_t)V);
    for (int32_t id = 0; id < V; id++) {
        int32_t ty = t->type[id];
        t->score[id] = ty == TT_CONTROL || ty == TT_USER_DEFINED || ty == TT_UNUSED ? -1000.0f
                       : ty == TT_NORMAL ? -(float)(nm + 1) : 0.0f;
    }
    for (size_t r = nm; r-- > 0;) /* lowest rank last: it wins */
        if (merged[r] >= 0 && merged[r] < V && t->type[merged[r]] == TT_NORMAL) t->score[merged[r]] = -(float)(r + 1);
    free(left);
    free(right);
    free(merged);
}

static void put_merges(fl_gguf_writer *w, fl_tokenizer *tok, const vocab_table *t, int32_t V) {
    int32_t *left, *right, *merged;
    size_t nm;
    fl_tokenizer_merges(tok, &left, &right, &merged, &nm);
    if (nm) {
        fl_gguf_kv_array(w, "tokenizer.ggml.merges", FL_GGUF_STRING, nm);
        fl_strbuf m = {0};
        for (size_t i = 0; i < nm; i++) {
            m.n = 0;
            if (left[i] < V) fl_strbuf_append(&m, t->text[left[i]], t->len[left[i]]);
            fl_strbuf_append(&m, " ", 1);
            if (right[i] < V) fl_strbuf_append(&m, t->text[right[i]], t->len[right[i]]);
            fl_gguf_arr_str(w, m.p, m.n);
        }
        free(m.p);
    }
    free(left);
    free(right);
    free(merged);
}

/* ---- special tokens ------------------------------------------------------------------------ */

static json_t *load_json_opt(const char *dir, const char *name, int *status) {
    char *path = fl_path_join(dir, name);
    json_t *root = NULL;
    if (fl_file_exists(path)) *status = fl_file_load_json(path, FL_FILE_CONFIG, 0, &root);
    free(path);
    return root;
}

static void put_special_ids(fl_gguf_writer *w, fl_tokenizer *tok, json_t *tc, json_t *cc, int32_t V) {
    static const char *const types[] = {"bos", "eos", "unk", "sep", "pad"};
    static const char *const keys[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                                       "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id"};
    for (int i = 0; i < 5; i++) {
        char field[32];
        int32_t id = -1;
        snprintf(field, sizeof field, "%s_token", types[i]);
        json_t *e = tc ? json_object_get(tc, field) : NULL;
        if (json_is_object(e)) e = json_object_get(e, "content");
        if (json_is_string(e)) id = fl_tokenizer_token_to_id(tok, json_string_value(e));
        snprintf(field, sizeof field, "%s_token_id", types[i]);
        json_t *c = cc ? json_object_get(cc, field) : NULL;
        if ((id < 0 || id >= V) && json_is_integer(c)) id = (int32_t)json_integer_value(c);
        if (id >= 0 && id < V) fl_gguf_kv_u32(w, keys[i], (uint32_t)id);
    }
}

int fl_gguf_put_tokenizer(fl_gguf_writer *w, const char *model_dir, const fl_model_config *cfg, const char *chat_template) {
    fl_tokenizer *tok;
    if (fl_tokenizer_load(&tok, model_dir)) {
        char *why = strdup(fl_last_error());
        int rc = fl_input_error("%s (--no-tokenizer exports the model without one)", why);
        free(why);
        return rc;
    }
    const int32_t V = cfg->vocab_size;
    int status = 0;
    if (fl_tokenizer_vocab_size(tok) > V)
        status = fl_input_error("%s: the tokenizer has %d ids but config.json says vocab_size %d (tokenizer of another model?)", model_dir,
                                fl_tokenizer_vocab_size(tok), V);
    const int spm = !fl_tokenizer_is_byte_level(tok);
    char hash[65];
    const char *pre = spm ? "default" : fl_gguf_pre_tokenizer_name(tok, hash);
    if (!status && !pre)
        status = fl_input_error("%s: the tokenizer's pre-tokenizer is not one llama.cpp names (check-text sha256 %s; known: qwen2, smollm, "
                                "llama-bpe, gpt-2)", model_dir, hash);
    json_t *tc = status ? NULL : load_json_opt(model_dir, "tokenizer_config.json", &status);
    json_t *cc = status ? NULL : load_json_opt(model_dir, "config.json", &status);
    if (status) {
        json_decref(tc);
        fl_tokenizer_free(tok);
        return status;
    }
    vocab_table t = {0};
    build_tokens(tok, V, spm, &t);
    fl_gguf_kv_str(w, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
    fl_gguf_kv_str(w, "tokenizer.ggml.pre", pre);
    fl_gguf_kv_array(w, "tokenizer.ggml.tokens", FL_GGUF_STRING, (uint64_t)V);
    for (int32_t i = 0; i < V; i++) fl_gguf_arr_str(w, t.text[i], t.len[i]);
    if (spm) {
        fl_gguf_kv_array(w, "tokenizer.ggml.scores", FL_GGUF_F32, (uint64_t)V);
        for (int32_t i = 0; i < V; i++) fl_gguf_arr_f32(w, t.score[i]);
    }
    fl_gguf_kv_array(w, "tokenizer.ggml.token_type", FL_GGUF_I32, (uint64_t)V);
    for (int32_t i = 0; i < V; i++) fl_gguf_arr_i32(w, t.type[i]);
    if (!spm) put_merges(w, tok, &t, V);
    put_special_ids(w, tok, tc, cc, V);
    const int32_t *prefix, *suffix;
    int n_suffix, n_prefix = fl_tokenizer_post_ids(tok, &prefix, &suffix, &n_suffix);
    int32_t bos = fl_tokenizer_bos_id(tok), eos = fl_tokenizer_eos_id(tok);
    fl_gguf_kv_bool(w, "tokenizer.ggml.add_bos_token", n_prefix > 0 && prefix[0] == bos);
    fl_gguf_kv_bool(w, "tokenizer.ggml.add_eos_token", n_suffix > 0 && suffix[n_suffix - 1] == eos);
    json_t *aps = tc ? json_object_get(tc, "add_prefix_space") : NULL;
    if (cfg->arch == FL_ARCH_LLAMA && json_is_boolean(aps)) fl_gguf_kv_bool(w, "tokenizer.ggml.add_space_prefix", json_is_true(aps));
    /* llama.cpp's SentencePiece tokenizer prepends "▁" unless told: Gemma's pipeline does not */
    else if (spm && cfg->arch != FL_ARCH_LLAMA) fl_gguf_kv_bool(w, "tokenizer.ggml.add_space_prefix", fl_tokenizer_prepends_space(tok));
    const char *tpl = chat_template ? chat_template : fl_tokenizer_chat_template(tok);
    if (tpl) fl_gguf_kv_str(w, "tokenizer.chat_template", tpl);
    vocab_table_free(&t, V);
    json_decref(tc);
    json_decref(cc);
    fl_tokenizer_free(tok);
    return 0;
}
