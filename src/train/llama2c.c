/* llama2c.c — llama2.c checkpoint + tokenizer to an HF folder (see llama2c.h). */
#include "train/llama2c.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/utf8.h"
#include "io/file_util.h"
#include "io/output_dir.h"
#include "io/safetensors.h"
#include "train/spm_model.h"

static int read_all(const char *path, unsigned char **buf, size_t *len) {
    return fl_file_read_all(path, FL_FILE_WEIGHTS, (char **)buf, len);
}

static int write_json(const char *dir, const char *name, json_t *o) {
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    char *path = fl_path_join(dir, name);
    size_t n = strlen(text);
    text = realloc(text, n + 2);
    text[n] = '\n';
    int status = fl_write_file_atomic(path, text, n + 1);
    free(path);
    free(text);
    return status;
}

/* ---- weights ---------------------------------------------------------------------------------- */

/* (rows, cols) matrix of n_heads heads: interleaved-pair rows to rotate-half rows. */
static void permute_rows(float *dst, const float *src, int n_heads, int hs, int cols) {
    for (int h = 0; h < n_heads; h++)
        for (int j = 0; j < hs / 2; j++) {
            memcpy(dst + ((size_t)h * hs + j) * cols, src + ((size_t)h * hs + 2 * j) * cols, sizeof(float) * (size_t)cols);
            memcpy(dst + ((size_t)h * hs + hs / 2 + j) * cols, src + ((size_t)h * hs + 2 * j + 1) * cols,
                   sizeof(float) * (size_t)cols);
        }
}

static int looks_like_vocab_listing(const unsigned char *buf, size_t len);

/* A llama2.c tokenizer .bin: a small max length, then (score, length <= max, bytes) to the end. */
static int looks_like_tokenizer_bin(const unsigned char *buf, size_t len) {
    int32_t max, n;
    if (len < 4) return 0;
    memcpy(&max, buf, 4);
    if (max < 1 || max > 4096) return 0;
    size_t off = 4, count = 0;
    while (off + 8 <= len) {
        memcpy(&n, buf + off + 4, 4);
        if (n < 0 || n > max) return 0;
        off += 8 + (size_t)n;
        count++;
    }
    return off == len && count >= 3;
}

/* What a file that is not a v0 checkpoint is, and what to pass instead. */
static void checkpoint_hint(const unsigned char *buf, size_t len, char *hint, size_t cap) {
    uint32_t magic = 0;
    int32_t version = 0;
    if (len >= 8) { memcpy(&magic, buf, 4); memcpy(&version, buf + 4, 4); }
    uint64_t st_header = 0;
    if (len >= 9) memcpy(&st_header, buf, 8);
    if (magic == 0x616b3432)
        snprintf(hint, cap, "it is a llama2.c version-%d checkpoint (magic ak42); export the model with llama2.c's "
                            "export.py --version 0 (the legacy format read here)", version);
    else if (fl_spm_model_sniff(buf, len) || looks_like_vocab_listing(buf, len) || looks_like_tokenizer_bin(buf, len))
        snprintf(hint, cap, "it is a tokenizer: give it as --tokenizer, and the model .bin (e.g. stories260K.bin) as "
                            "--checkpoint");
    else if (len >= 9 && st_header > 1 && st_header <= len - 8 && buf[8] == '{')
        snprintf(hint, cap, "it is a safetensors file: a Hugging Face model folder needs no conversion (--model DIR)");
    else
        snprintf(hint, cap, "--checkpoint takes a llama2.c model .bin (export.py --version 0), e.g. stories260K.bin");
}

static int convert_weights(const char *path, const char *out_dir, int *vocab_out, int *seq_out) {
    unsigned char *buf;
    size_t len;
    FL_TRY(read_all(path, &buf, &len));
    int32_t h[7];
    if (len < sizeof h) { free(buf); return fl_input_error("%s: too short for a llama2.c header (28 bytes)", path); }
    memcpy(h, buf, sizeof h);
    int dim = h[0], hidden = h[1], L = h[2], NH = h[3], NKV = h[4], V = h[5] == INT32_MIN ? 0 : h[5] < 0 ? -h[5] : h[5], seq = h[6];
    int shared = h[5] > 0;
    if (dim <= 0 || hidden <= 0 || L <= 0 || NH <= 0 || NKV <= 0 || V <= 0 || seq <= 0 || dim % NH || NH % NKV ||
        (dim / NH) % 2 || dim > 1 << 16 || hidden > 1 << 18 || L > 1024 || V > 1 << 22 || seq > 1 << 22) {
        char hint[256];
        checkpoint_hint(buf, len, hint, sizeof hint);
        free(buf);
        return fl_input_error("%s: header (dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d, seq %d) is not a "
                              "llama2.c v0 checkpoint; %s", path, h[0], h[1], h[2], h[3], h[4], h[5], h[6], hint);
    }
    int hs = dim / NH, kvd = NKV * hs;
    size_t D = (size_t)dim, HID = (size_t)hidden, KVD = (size_t)kvd, LL = (size_t)L;
    size_t n_floats = (size_t)V * D + LL * D + LL * D * D + 2 * LL * KVD * D + LL * D * D + LL * D + 3 * LL * HID * D + D +
                      (size_t)seq * (hs / 2) * 2 + (shared ? 0 : (size_t)V * D);
    if (len != sizeof h + n_floats * 4) {
        free(buf);
        return fl_input_error("%s: %zu bytes, but the header implies %zu (a llama2.c v0 checkpoint of these sizes)", path,
                              len, sizeof h + n_floats * 4);
    }
    float *f = fl_malloc(n_floats * sizeof(float));
    memcpy(f, buf + sizeof h, n_floats * sizeof(float));
    free(buf);
    const float *emb = f, *rms_att = emb + (size_t)V * D, *wq = rms_att + LL * D, *wk = wq + LL * D * D;
    const float *wv = wk + LL * KVD * D, *wo = wv + LL * KVD * D, *rms_ffn = wo + LL * D * D, *w1 = rms_ffn + LL * D;
    const float *w2 = w1 + LL * HID * D, *w3 = w2 + LL * D * HID, *rms_final = w3 + LL * HID * D;
    const float *wcls = shared ? NULL : rms_final + D + (size_t)seq * (hs / 2) * 2;
    /* a NaN or Inf would convert and then be refused by every load (model/weights.c): say it here;
     * the RoPE tables llama2.c stores after rms_final are not converted, so not checked */
    size_t rope0 = (size_t)(rms_final - f) + D, rope1 = rope0 + (size_t)seq * (hs / 2) * 2;
    for (size_t i = 0; i < n_floats; i++)
        if (!isfinite(f[i]) && (i < rope0 || i >= rope1)) {
            int nan = isnan(f[i]);
            free(f);
            return fl_input_error("%s: weight float %zu (byte %zu) is %s: the checkpoint is damaged or came from a run "
                                  "that diverged", path, i, sizeof h + 4 * i, nan ? "NaN" : "infinite");
        }
    float *perm = fl_malloc(sizeof(float) * LL * (D * D + KVD * D));
    int max_t = 3 + 9 * L;
    fl_st_write_tensor *t = fl_calloc((size_t)max_t, sizeof *t);
    char (*names)[96] = fl_calloc((size_t)max_t, 96);
    int n = 0;
#define ADD2(nm, ptr, r, c) do { snprintf(names[n], 96, "%s", nm); t[n] = (fl_st_write_tensor){.name = names[n], .dtype = FL_F32, \
        .ndim = 2, .shape = {(r), (c)}, .data = (ptr)}; n++; } while (0)
#define ADD1(nm, ptr, r) do { snprintf(names[n], 96, "%s", nm); t[n] = (fl_st_write_tensor){.name = names[n], .dtype = FL_F32, \
        .ndim = 1, .shape = {(r)}, .data = (ptr)}; n++; } while (0)
    ADD2("model.embed_tokens.weight", emb, V, dim);
    char nm[96];
    for (int l = 0; l < L; l++) {
        float *pq = perm + (size_t)l * (D * D + KVD * D), *pk = pq + D * D;
        permute_rows(pq, wq + (size_t)l * D * D, NH, hs, dim);
        permute_rows(pk, wk + (size_t)l * KVD * D, NKV, hs, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.input_layernorm.weight", l); ADD1(nm, rms_att + (size_t)l * D, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.q_proj.weight", l); ADD2(nm, pq, dim, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.k_proj.weight", l); ADD2(nm, pk, kvd, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.v_proj.weight", l); ADD2(nm, wv + (size_t)l * KVD * D, kvd, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.o_proj.weight", l); ADD2(nm, wo + (size_t)l * D * D, dim, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.post_attention_layernorm.weight", l); ADD1(nm, rms_ffn + (size_t)l * D, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.gate_proj.weight", l); ADD2(nm, w1 + (size_t)l * HID * D, hidden, dim);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.down_proj.weight", l); ADD2(nm, w2 + (size_t)l * D * HID, dim, hidden);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.up_proj.weight", l); ADD2(nm, w3 + (size_t)l * HID * D, hidden, dim);
    }
    ADD1("model.norm.weight", rms_final, dim);
    if (wcls) ADD2("lm_head.weight", wcls, V, dim);
#undef ADD1
#undef ADD2
    const char *meta[] = {"format", "pt"};
    char *st_path = fl_path_join(out_dir, "model.safetensors");
    int status = fl_safetensors_write(st_path, t, n, meta, 1);
    free(st_path);
    free(names);
    free(t);
    free(perm);
    free(f);
    if (status) return status;

    json_t *c = json_object();
    json_t *arch = json_array();
    json_array_append_new(arch, json_string("LlamaForCausalLM"));
    json_object_set_new(c, "architectures", arch);
    json_object_set_new(c, "model_type", json_string("llama"));
    json_object_set_new(c, "hidden_size", json_integer(dim));
    json_object_set_new(c, "intermediate_size", json_integer(hidden));
    json_object_set_new(c, "num_hidden_layers", json_integer(L));
    json_object_set_new(c, "num_attention_heads", json_integer(NH));
    json_object_set_new(c, "num_key_value_heads", json_integer(NKV));
    json_object_set_new(c, "head_dim", json_integer(hs));
    json_object_set_new(c, "vocab_size", json_integer(V));
    json_object_set_new(c, "max_position_embeddings", json_integer(seq));
    json_object_set_new(c, "rms_norm_eps", json_real(1e-5));
    json_object_set_new(c, "rope_theta", json_real(10000.0));
    json_object_set_new(c, "hidden_act", json_string("silu"));
    json_object_set_new(c, "attention_bias", json_false());
    json_object_set_new(c, "mlp_bias", json_false());
    json_object_set_new(c, "tie_word_embeddings", json_boolean(shared));
    json_object_set_new(c, "bos_token_id", json_integer(1));
    json_object_set_new(c, "eos_token_id", json_integer(2));
    json_object_set_new(c, "torch_dtype", json_string("float32"));
    FL_TRY(write_json(out_dir, "config.json", c));
    json_t *g = json_object();
    json_object_set_new(g, "bos_token_id", json_integer(1));
    json_object_set_new(g, "eos_token_id", json_integer(2));
    FL_TRY(write_json(out_dir, "generation_config.json", g));
    *vocab_out = V;
    *seq_out = seq;
    return 0;
}

/* ---- tokenizer -------------------------------------------------------------------------------- */

typedef struct {
    char *piece;   /* UTF-8, '▁' for spaces */
    float score;
    int special;   /* <unk>, <s>, </s>, or a byte token <0xNN> */
} tok_entry;

typedef struct { int left, right, merged; } merge_rank;

static const tok_entry *sort_entries;
static int cmp_merge(const void *a, const void *b) {
    const merge_rank *x = a, *y = b;
    float sx = sort_entries[x->merged].score, sy = sort_entries[y->merged].score;
    if (sx != sy) return sx > sy ? -1 : 1; /* higher score merges first */
    if (x->merged != y->merged) return x->merged - y->merged;
    if (x->left != y->left) return x->left - y->left;
    return x->right - y->right;
}

static int find_piece(const tok_entry *e, int V, const char *s, size_t len) {
    for (int i = 0; i < V; i++)
        if (!e[i].special && strlen(e[i].piece) == len && !memcmp(e[i].piece, s, len)) return i;
    return -1;
}

static json_t *added_token(int id, const char *content) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(id));
    json_object_set_new(o, "content", json_string(content));
    json_object_set_new(o, "single_word", json_false());
    json_object_set_new(o, "lstrip", json_false());
    json_object_set_new(o, "rstrip", json_false());
    json_object_set_new(o, "normalized", json_false());
    json_object_set_new(o, "special", json_true());
    return o;
}

static json_t *replace_step(const char *from, const char *to) {
    json_t *o = json_object(), *pat = json_object();
    json_object_set_new(o, "type", json_string("Replace"));
    json_object_set_new(pat, "String", json_string(from));
    json_object_set_new(o, "pattern", pat);
    json_object_set_new(o, "content", json_string(to));
    return o;
}

/* The byte a piece stands for when it is exactly "<0xNN>" with two upper-case hex digits (the
 * spelling byte fallback looks up, as in HF tokenizers), else -1: "<0xc1>" or "<0x c>" are
 * ordinary pieces. */
static int byte_piece_value(const char *p) {
    static const char hex[] = "0123456789ABCDEF";
    if (strlen(p) != 6 || memcmp(p, "<0x", 3) || p[5] != '>') return -1;
    const char *hi = p[3] ? strchr(hex, p[3]) : NULL, *lo = p[4] ? strchr(hex, p[4]) : NULL;
    return hi && lo ? (int)((hi - hex) * 16 + (lo - hex)) : -1;
}

/* Marks the special pieces (<unk>, <s>, </s> as ids 0-2, and byte pieces <0xNN>); returns how many
 * distinct byte pieces there are: byte fallback needs all 256. */
static int mark_special(tok_entry *e, int V) {
    unsigned char have_byte[256] = {0};
    int n_bytes = 0;
    for (int i = 0; i < V; i++) {
        int byte = byte_piece_value(e[i].piece);
        e[i].special = i <= 2 || byte >= 0;
        if (i > 2 && byte >= 0 && !have_byte[byte]) { have_byte[byte] = 1; n_bytes++; }
    }
    return n_bytes;
}

#define BIN_LAYOUT "llama2.c's tokenizer .bin is an int32 max length, then per token an f32 score, an int32 length " \
                   "and the bytes; a SentencePiece .model is read too"

/* llama2.c's tokenizer .bin (tokenizer.py export): ' ' for '▁', <s> </s> written as "\n<s>\n" "\n</s>\n". */
static int read_bin_pieces(const unsigned char *buf, size_t len, const char *path, int V, tok_entry *e) {
    if (len < 4) return fl_input_error("%s: too short (%s)", path, BIN_LAYOUT);
    size_t off = 4;
    for (int i = 0; i < V; i++) {
        int32_t n;
        if (off + 8 > len) return fl_input_error("%s: truncated at token %d (the model has %d)", path, i, V);
        memcpy(&e[i].score, buf + off, 4);
        memcpy(&n, buf + off + 4, 4);
        off += 8;
        if (n < 0 || (size_t)n > len - off) return fl_input_error("%s: token %d has a bad length %d (%s)", path, i, n, BIN_LAYOUT);
        /* ' ' -> '▁' (3 bytes each) */
        char *p = fl_malloc((size_t)n * 3 + 1);
        size_t k = 0;
        for (int j = 0; j < n; j++) {
            if (buf[off + j] == ' ') { memcpy(p + k, "\xE2\x96\x81", 3); k += 3; }
            else p[k++] = (char)buf[off + j];
        }
        p[k] = 0;
        off += (size_t)n;
        if (i == 1 || i == 2) { free(p); p = strdup(i == 1 ? "<s>" : "</s>"); }
        e[i].piece = p;
    }
    return 0;
}

/* Whether a SentencePiece model's pieces are what the tokenizer.json written here expresses:
 * <unk> <s> </s> as ids 0-2 (llama2.c's layout), then normal and byte pieces only, byte fallback
 * exactly when all 256 byte pieces are there. */
static int check_model_pieces(const fl_spm_model *m, const char *path) {
    static const char *const type_names[] = {"?", "normal", "unknown", "control", "user-defined", "unused", "byte"};
    static const char *const layout[3] = {"<unk>", "<s>", "</s>"};
    unsigned char have_byte[256] = {0};
    int n_bytes = 0;
    for (size_t i = 0; i < m->n_pieces; i++) {
        const fl_spm_piece *p = &m->pieces[i];
        int byte = byte_piece_value(p->piece);
        if (i < 3 && (strcmp(p->piece, layout[i]) || p->type != (i ? FL_SPM_CONTROL : FL_SPM_UNKNOWN)))
            return fl_input_error("%s: piece %zu is '%s' (%s); llama2.c's layout is <unk>, <s>, </s> as ids 0, 1, 2",
                                  path, i, p->piece, type_names[p->type]);
        if (i >= 3 && p->type != FL_SPM_NORMAL && p->type != FL_SPM_BYTE)
            return fl_input_error("%s: piece %zu '%s' is a %s piece; besides <unk>, <s>, </s> only normal and byte pieces "
                                  "convert", path, i, p->piece, type_names[p->type]);
        if (p->type == FL_SPM_BYTE && byte < 0)
            return fl_input_error("%s: piece %zu '%s' is a byte piece not spelled <0xNN>", path, i, p->piece);
        if (p->type == FL_SPM_BYTE && !have_byte[byte]) { have_byte[byte] = 1; n_bytes++; }
    }
    if (m->byte_fallback != (n_bytes == 256))
        return fl_input_error("%s: trainer_spec.byte_fallback is %s, but %d of the 256 byte pieces are there", path,
                              m->byte_fallback ? "true" : "false", n_bytes);
    return 0;
}

/* A SentencePiece .model (spm_model.h), when the tokenizer.json written here can express it: BPE,
 * the identity normalizer with its dummy prefix (llama2.c's train_vocab makes such models). */
static int read_model_pieces(const unsigned char *buf, size_t len, const char *path, int V, tok_entry *e) {
    fl_spm_model m;
    FL_TRY(fl_spm_model_parse(buf, len, path, &m));
    static const char *const model_types[] = {"?", "unigram", "BPE", "word", "char"};
    int status = 0;
    if (m.model_type != FL_SPM_BPE)
        status = fl_input_error("%s: a SentencePiece %s model; convert-llama2c converts BPE models (llama2.c's "
                                "train_vocab makes BPE)", path, m.model_type > 0 ? model_types[m.model_type] : "unknown-type");
    else if (m.n_pieces != (size_t)V)
        status = fl_input_error("%s: %zu pieces, but the checkpoint's vocabulary is %d (the tokenizer of another model?)",
                                path, m.n_pieces, V);
    else if (m.charsmap_bytes)
        status = fl_input_error("%s: normalizer_spec '%s' has a character map (%zu bytes), which the converted "
                                "tokenizer.json cannot express; only the identity normalizer converts", path,
                                m.normalizer, m.charsmap_bytes);
    else if (!m.add_dummy_prefix)
        status = fl_input_error("%s: normalizer_spec.add_dummy_prefix is false; the converted tokenizer prepends '▁' "
                                "as llama2.c's encoder does", path);
    else
        status = check_model_pieces(&m, path);
    for (int i = 0; i < V && !status; i++) {
        e[i].score = m.pieces[i].score;
        e[i].piece = m.pieces[i].piece;
        m.pieces[i].piece = NULL; /* e owns it now */
    }
    fl_spm_model_free(&m);
    return status;
}

/* A first line "piece<TAB>score", as in SentencePiece's .vocab listing. */
static int looks_like_vocab_listing(const unsigned char *buf, size_t len) {
    const unsigned char *nl = memchr(buf, '\n', len < 4096 ? len : 4096), *tab = memchr(buf, '\t', len < 4096 ? len : 4096);
    if (!nl || !tab || tab > nl || tab == buf) return 0;
    char num[64];
    size_t n = (size_t)(nl - tab - 1);
    if (!n || n >= sizeof num) return 0;
    memcpy(num, tab + 1, n);
    num[n] = 0;
    char *end;
    strtod(num, &end);
    return *end == 0;
}

/* The pieces of `path`: a SentencePiece .model, else llama2.c's .bin. Files people pass instead
 * are refused with one line saying what to pass. */
static int read_pieces(const char *path, int V, tok_entry *e) {
    unsigned char *buf;
    size_t len;
    FL_TRY(read_all(path, &buf, &len));
    size_t k = 0;
    while (k < len && (buf[k] == ' ' || buf[k] == '\n' || buf[k] == '\r' || buf[k] == '\t')) k++;
    int status;
    if (fl_spm_model_sniff(buf, len))
        status = read_model_pieces(buf, len, path, V, e);
    else if (looks_like_vocab_listing(buf, len))
        status = fl_input_error("%s: a SentencePiece .vocab listing (piece, score) has no piece types or model type; "
                                "pass the .model beside it, or llama2.c's tokenizer .bin", path);
    else if (k < len && buf[k] == '{')
        status = fl_input_error("%s: a JSON file (a Hugging Face tokenizer.json?); --tokenizer takes llama2.c's "
                                "tokenizer .bin or a SentencePiece .model (copy a tokenizer.json into --out yourself)", path);
    else
        status = read_bin_pieces(buf, len, path, V, e);
    free(buf);
    return status;
}

static int convert_tokenizer(const char *path, const char *out_dir, int V, int seq) {
    tok_entry *e = fl_calloc((size_t)V, sizeof *e);
    int status = read_pieces(path, V, e);
    int n_bytes = status ? 0 : mark_special(e, V);
    for (int i = 0; i < V && !status; i++) { /* tokenizer.json holds text: a piece that is not UTF-8 cannot go there */
        size_t n = strlen(e[i].piece), bad = fl_utf8_validate(e[i].piece, n);
        if (bad < n) status = fl_input_error("%s: token %d is not UTF-8 text (byte %zu of its %zu)", path, i, bad, n);
    }
    if (!status && strcmp(e[0].piece, "<unk>")) status = fl_input_error("%s: token 0 is '%s', expected <unk>", path, e[0].piece);
    for (int i = 0; i < V && !status; i++)
        for (int j = 0; j < i && !status; j++)
            if (!strcmp(e[i].piece, e[j].piece)) status = fl_input_error("%s: tokens %d and %d are both '%s'", path, j, i, e[i].piece);
    json_t *vocab = json_object(), *merges = json_array();
    if (!status) {
        for (int i = 0; i < V; i++) json_object_set_new(vocab, e[i].piece, json_integer(i));
        /* merges: every split of a (non-special) piece into two pieces, ranked by the piece's score */
        size_t cap = 1024, nm = 0;
        merge_rank *m = fl_malloc(cap * sizeof *m);
        for (int i = 0; i < V; i++) {
            if (e[i].special) continue;
            size_t plen = strlen(e[i].piece);
            for (size_t cut = 1; cut < plen; cut++) {
                if (((unsigned char)e[i].piece[cut] & 0xC0) == 0x80) continue; /* inside a UTF-8 character */
                int l = find_piece(e, V, e[i].piece, cut), r = find_piece(e, V, e[i].piece + cut, plen - cut);
                if (l < 0 || r < 0) continue;
                if (nm == cap) { cap *= 2; m = realloc(m, cap * sizeof *m); if (!m) fl_die("out of memory"); }
                m[nm++] = (merge_rank){l, r, i};
            }
        }
        sort_entries = e;
        qsort(m, nm, sizeof *m, cmp_merge);
        for (size_t k = 0; k < nm; k++) {
            json_t *pair = json_array();
            json_array_append_new(pair, json_string(e[m[k].left].piece));
            json_array_append_new(pair, json_string(e[m[k].right].piece));
            json_array_append_new(merges, pair);
        }
        free(m);
    }
    if (status) {
        json_decref(vocab);
        json_decref(merges);
    } else {
        json_t *root = json_object();
        json_object_set_new(root, "version", json_string("1.0"));
        json_object_set_new(root, "truncation", json_null());
        json_object_set_new(root, "padding", json_null());
        json_t *added = json_array();
        json_array_append_new(added, added_token(0, "<unk>"));
        json_array_append_new(added, added_token(1, "<s>"));
        json_array_append_new(added, added_token(2, "</s>"));
        json_object_set_new(root, "added_tokens", added);
        json_t *norm = json_object(), *steps = json_array(), *prepend = json_object();
        json_object_set_new(prepend, "type", json_string("Prepend"));
        json_object_set_new(prepend, "prepend", json_string("\xE2\x96\x81"));
        json_array_append_new(steps, prepend);
        json_array_append_new(steps, replace_step(" ", "\xE2\x96\x81"));
        json_object_set_new(norm, "type", json_string("Sequence"));
        json_object_set_new(norm, "normalizers", steps);
        json_object_set_new(root, "normalizer", norm);
        json_object_set_new(root, "pre_tokenizer", json_null());
        json_t *post = json_object(), *single = json_array(), *sp = json_object(), *sq = json_object(), *spec = json_object();
        json_object_set_new(sp, "SpecialToken", json_pack("{s:s, s:i}", "id", "<s>", "type_id", 0));
        json_object_set_new(sq, "Sequence", json_pack("{s:s, s:i}", "id", "A", "type_id", 0));
        json_array_append_new(single, sp);
        json_array_append_new(single, sq);
        json_object_set_new(spec, "<s>", json_pack("{s:s, s:[i], s:[s]}", "id", "<s>", "ids", 1, "tokens", "<s>"));
        json_object_set_new(post, "type", json_string("TemplateProcessing"));
        json_object_set_new(post, "single", single);
        json_object_set_new(post, "pair", json_deep_copy(single));
        json_object_set_new(post, "special_tokens", spec);
        json_object_set_new(root, "post_processor", post);
        json_t *dec = json_object(), *dsteps = json_array();
        json_array_append_new(dsteps, replace_step("\xE2\x96\x81", " "));
        json_array_append_new(dsteps, json_pack("{s:s}", "type", "ByteFallback"));
        json_array_append_new(dsteps, json_pack("{s:s}", "type", "Fuse"));
        json_array_append_new(dsteps, json_pack("{s:s, s:s, s:i, s:i}", "type", "Strip", "content", " ", "start", 1, "stop", 0));
        json_object_set_new(dec, "type", json_string("Sequence"));
        json_object_set_new(dec, "decoders", dsteps);
        json_object_set_new(root, "decoder", dec);
        json_t *model = json_object();
        json_object_set_new(model, "type", json_string("BPE"));
        json_object_set_new(model, "dropout", json_null());
        json_object_set_new(model, "unk_token", json_string("<unk>"));
        json_object_set_new(model, "continuing_subword_prefix", json_null());
        json_object_set_new(model, "end_of_word_suffix", json_null());
        json_object_set_new(model, "fuse_unk", json_true());
        json_object_set_new(model, "byte_fallback", json_boolean(n_bytes == 256));
        json_object_set_new(model, "ignore_merges", json_false());
        json_object_set_new(model, "vocab", vocab);
        json_object_set_new(model, "merges", merges);
        json_object_set_new(root, "model", model);
        status = write_json(out_dir, "tokenizer.json", root);
        if (!status) {
            json_t *tc = json_object(), *dec_map = json_object();
            const char *sp_names[3] = {"<unk>", "<s>", "</s>"};
            for (int i = 0; i < 3; i++) {
                json_t *a = added_token(i, sp_names[i]);
                json_object_del(a, "id");
                char key[12];
                snprintf(key, sizeof key, "%d", i);
                json_object_set_new(dec_map, key, a);
            }
            json_object_set_new(tc, "add_bos_token", json_true());
            json_object_set_new(tc, "add_eos_token", json_false());
            json_object_set_new(tc, "added_tokens_decoder", dec_map);
            json_object_set_new(tc, "bos_token", json_string("<s>"));
            json_object_set_new(tc, "eos_token", json_string("</s>"));
            json_object_set_new(tc, "unk_token", json_string("<unk>"));
            json_object_set_new(tc, "clean_up_tokenization_spaces", json_false());
            json_object_set_new(tc, "legacy", json_false());
            json_object_set_new(tc, "model_max_length", json_integer(seq));
            json_object_set_new(tc, "tokenizer_class", json_string("LlamaTokenizer"));
            status = write_json(out_dir, "tokenizer_config.json", tc);
        }
    }
    for (int i = 0; i < V; i++) free(e[i].piece);
    free(e);
    return status;
}

int fl_llama2c_convert(const char *checkpoint_bin, const char *tokenizer_bin, const char *out_dir, int force) {
    fl_output_dir od;
    FL_TRY(fl_output_dir_begin(&od, out_dir, force, NULL, 0));
    int V = 0, seq = 0;
    int status = convert_weights(checkpoint_bin, od.stage, &V, &seq);
    if (!status && tokenizer_bin) status = convert_tokenizer(tokenizer_bin, od.stage, V, seq);
    if (status) fl_output_dir_abort(&od);
    else status = fl_output_dir_commit(&od);
    return status;
}
