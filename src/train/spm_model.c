/* spm_model.c — a bounds-checked protobuf wire-format reader for the SentencePiece ModelProto
 * fields convert-llama2c uses (see spm_model.h). Wire types: 0 varint, 1 fixed64, 2
 * length-delimited, 5 fixed32; the deprecated groups (3, 4) are refused. Not a general protobuf
 * library: no schema, no writer.
 */
#include "train/spm_model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tokenizer/text_check.h"

/* ---- wire format ------------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *base, *p, *end; /* base: the file's first byte, for offsets in messages */
    const char *path;
} pb_reader;

static int pb_error(const pb_reader *r, const char *field, const char *what) {
    return fl_input_error("%s: byte %zu: %s: %s (a SentencePiece .model is a protobuf ModelProto)", r->path,
                          (size_t)(r->p - r->base), field, what);
}

static int pb_varint(pb_reader *r, uint64_t *v, const char *field) {
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) return pb_error(r, field, "a varint runs past the end of its message");
        unsigned char b = *r->p++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 0;
    }
    return pb_error(r, field, "a varint longer than 10 bytes");
}

static int pb_key(pb_reader *r, uint64_t *field, int *wire) {
    uint64_t key;
    FL_TRY(pb_varint(r, &key, "field key"));
    *field = key >> 3;
    *wire = (int)(key & 7);
    if (*field == 0 || *field > 0x1FFFFFFF) return pb_error(r, "field key", "field number 0 or past 2^29");
    return 0;
}

/* A length-delimited value: *data, *n inside the message. */
static int pb_bytes(pb_reader *r, const unsigned char **data, size_t *n, const char *field) {
    uint64_t len;
    FL_TRY(pb_varint(r, &len, field));
    if (len > (uint64_t)(r->end - r->p)) return pb_error(r, field, "a length past the end of its message");
    *data = r->p;
    *n = (size_t)len;
    r->p += len;
    return 0;
}

static int pb_fixed(pb_reader *r, size_t n, const char *field) {
    if ((size_t)(r->end - r->p) < n) return pb_error(r, field, "a fixed-size value past the end of its message");
    r->p += n;
    return 0;
}

/* Skips a value of an unknown field. */
static int pb_skip(pb_reader *r, int wire, const char *field) {
    uint64_t v;
    const unsigned char *d = NULL;
    size_t n = 0;
    switch (wire) {
    case 0: return pb_varint(r, &v, field);
    case 1: return pb_fixed(r, 8, field);
    case 2: return pb_bytes(r, &d, &n, field);
    case 5: return pb_fixed(r, 4, field);
    default: return pb_error(r, field, wire == 3 || wire == 4 ? "a protobuf group (not used by ModelProto)" : "wire type 6 or 7");
    }
}

static int pb_want(const pb_reader *r, int wire, int want, const char *field) {
    if (wire == want) return 0;
    char what[64];
    snprintf(what, sizeof what, "wire type %d, expected %d", wire, want);
    return pb_error(r, field, what);
}

/* A sub-message's reader over [d, d + n). */
static pb_reader pb_sub(const pb_reader *r, const unsigned char *d, size_t n) {
    pb_reader s = {.base = r->base, .p = d, .end = d + n, .path = r->path};
    return s;
}

/* ---- ModelProto ------------------------------------------------------------------------------- */

static int parse_piece(pb_reader *r, size_t index, fl_spm_piece *out) {
    char name[48];
    out->type = FL_SPM_NORMAL;
    out->score = 0;
    const unsigned char *text = NULL;
    size_t text_len = 0;
    while (r->p < r->end) {
        uint64_t field, v;
        int wire;
        FL_TRY(pb_key(r, &field, &wire));
        if (field == 1) {
            snprintf(name, sizeof name, "pieces[%zu].piece", index);
            FL_TRY(pb_want(r, wire, 2, name));
            FL_TRY(pb_bytes(r, &text, &text_len, name));
            int nul;
            if (!text_len) return pb_error(r, name, "an empty piece");
            if (fl_text_check((const char *)text, text_len, &nul) != text_len) return pb_error(r, name, "not UTF-8 text");
        } else if (field == 2) {
            snprintf(name, sizeof name, "pieces[%zu].score", index);
            FL_TRY(pb_want(r, wire, 5, name));
            FL_TRY(pb_fixed(r, 4, name));
            memcpy(&out->score, r->p - 4, 4);
            if (!isfinite(out->score)) return pb_error(r, name, "not a finite number");
        } else if (field == 3) {
            snprintf(name, sizeof name, "pieces[%zu].type", index);
            FL_TRY(pb_want(r, wire, 0, name));
            FL_TRY(pb_varint(r, &v, name));
            if (v < FL_SPM_NORMAL || v > FL_SPM_BYTE) return pb_error(r, name, "not a SentencePiece type (1..6)");
            out->type = (int)v;
        } else {
            FL_TRY(pb_skip(r, wire, "pieces[] (an unknown field)"));
        }
    }
    if (!text) {
        snprintf(name, sizeof name, "pieces[%zu].piece", index);
        return pb_error(r, name, "missing");
    }
    out->piece = fl_malloc(text_len + 1);
    memcpy(out->piece, text, text_len);
    out->piece[text_len] = 0;
    return 0;
}

static int parse_trainer_spec(pb_reader *r, fl_spm_model *m) {
    while (r->p < r->end) {
        uint64_t field, v;
        int wire;
        FL_TRY(pb_key(r, &field, &wire));
        if (field == 3 || field == 35) {
            const char *name = field == 3 ? "trainer_spec.model_type" : "trainer_spec.byte_fallback";
            FL_TRY(pb_want(r, wire, 0, name));
            FL_TRY(pb_varint(r, &v, name));
            if (field == 3) m->model_type = v <= FL_SPM_CHAR ? (int)v : -1;
            else m->byte_fallback = v != 0;
        } else {
            FL_TRY(pb_skip(r, wire, "trainer_spec"));
        }
    }
    return 0;
}

static int parse_normalizer_spec(pb_reader *r, fl_spm_model *m) {
    while (r->p < r->end) {
        uint64_t field, v;
        int wire;
        const unsigned char *d = NULL;
        size_t n = 0;
        FL_TRY(pb_key(r, &field, &wire));
        if (field == 1 || field == 2) {
            const char *name = field == 1 ? "normalizer_spec.name" : "normalizer_spec.precompiled_charsmap";
            FL_TRY(pb_want(r, wire, 2, name));
            FL_TRY(pb_bytes(r, &d, &n, name));
            if (field == 2) m->charsmap_bytes = n;
            else snprintf(m->normalizer, sizeof m->normalizer, "%.*s", (int)(n < 63 ? n : 63), (const char *)d);
        } else if (field == 3) {
            FL_TRY(pb_want(r, wire, 0, "normalizer_spec.add_dummy_prefix"));
            FL_TRY(pb_varint(r, &v, "normalizer_spec.add_dummy_prefix"));
            m->add_dummy_prefix = v != 0;
        } else {
            FL_TRY(pb_skip(r, wire, "normalizer_spec"));
        }
    }
    return 0;
}

int fl_spm_model_sniff(const unsigned char *buf, size_t len) {
    return len >= 2 && buf[0] == 0x0A && buf[1] != 0;
}

static int parse_model(pb_reader *r, fl_spm_model *m) {
    size_t cap = 0;
    while (r->p < r->end) {
        uint64_t field;
        int wire;
        const unsigned char *d = NULL;
        size_t n = 0;
        FL_TRY(pb_key(r, &field, &wire));
        const char *name = field == 1 ? "pieces" : field == 2 ? "trainer_spec" : "normalizer_spec";
        if (field > 3) { FL_TRY(pb_skip(r, wire, "ModelProto")); continue; }
        FL_TRY(pb_want(r, wire, 2, name));
        FL_TRY(pb_bytes(r, &d, &n, name));
        pb_reader sub = pb_sub(r, d, n);
        if (field == 2) { FL_TRY(parse_trainer_spec(&sub, m)); continue; }
        if (field == 3) { FL_TRY(parse_normalizer_spec(&sub, m)); continue; }
        if (m->n_pieces == cap) {
            cap = cap ? cap * 2 : 256;
            fl_spm_piece *np = realloc(m->pieces, cap * sizeof *np);
            if (!np) fl_die("out of memory reading %zu SentencePiece pieces", cap);
            m->pieces = np;
        }
        m->pieces[m->n_pieces].piece = NULL;
        FL_TRY(parse_piece(&sub, m->n_pieces, &m->pieces[m->n_pieces]));
        m->n_pieces++;
    }
    if (!m->n_pieces) return pb_error(r, "pieces", "none (not a SentencePiece model)");
    return 0;
}

int fl_spm_model_parse(const unsigned char *buf, size_t len, const char *path, fl_spm_model *out) {
    memset(out, 0, sizeof *out);
    out->model_type = FL_SPM_UNIGRAM;
    out->add_dummy_prefix = 1;
    pb_reader r = {.base = buf, .p = buf, .end = buf + len, .path = path};
    int status = parse_model(&r, out);
    if (status) fl_spm_model_free(out);
    return status;
}

void fl_spm_model_free(fl_spm_model *m) {
    for (size_t i = 0; i < m->n_pieces; i++) free(m->pieces[i].piece);
    free(m->pieces);
    memset(m, 0, sizeof *m);
}
