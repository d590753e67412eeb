/* spm_model.h — reads the parts of a SentencePiece model file (`*.model`: a serialized
 * sentencepiece.ModelProto, protobuf wire format) that convert-llama2c needs to write a
 * tokenizer.json: the pieces with their scores and types, the model type, byte fallback, and the
 * normalizer's name, character map size and dummy prefix. Every length, varint and field is checked
 * against the buffer; an unknown field is skipped, as protobuf readers do. Not an encoder, not a
 * writer, and not the other ModelProto fields (self-test data, denormalizer, trainer inputs).
 *
 * Field numbers (sentencepiece_model.proto): ModelProto { 1: repeated SentencePiece pieces,
 * 2: TrainerSpec trainer_spec, 3: NormalizerSpec normalizer_spec }; SentencePiece { 1: string
 * piece, 2: float score, 3: Type type (default NORMAL) }; TrainerSpec { 3: ModelType model_type
 * (default UNIGRAM), 35: bool byte_fallback }; NormalizerSpec { 1: string name, 2: bytes
 * precompiled_charsmap, 3: bool add_dummy_prefix (default true) }.
 *
 *     fl_spm_model m;
 *     if (fl_spm_model_parse(buf, len, "tok512.model", &m)) { puts(fl_last_error()); ... }
 *     for (size_t i = 0; i < m.n_pieces; i++) use(m.pieces[i].piece, m.pieces[i].score);
 *     fl_spm_model_free(&m);
 */
#ifndef FL_TRAIN_SPM_MODEL_H
#define FL_TRAIN_SPM_MODEL_H

#include <stddef.h>

enum { FL_SPM_NORMAL = 1, FL_SPM_UNKNOWN = 2, FL_SPM_CONTROL = 3, FL_SPM_USER_DEFINED = 4, FL_SPM_UNUSED = 5, FL_SPM_BYTE = 6 };
enum { FL_SPM_UNIGRAM = 1, FL_SPM_BPE = 2, FL_SPM_WORD = 3, FL_SPM_CHAR = 4 };

typedef struct {
    char *piece;  /* UTF-8, NUL-terminated; "▁" for a space */
    float score;
    int type;     /* FL_SPM_NORMAL ... FL_SPM_BYTE */
} fl_spm_piece;

typedef struct {
    fl_spm_piece *pieces;      /* (n_pieces) in id order */
    size_t n_pieces;
    int model_type;            /* trainer_spec.model_type: FL_SPM_UNIGRAM (the default) ... */
    int byte_fallback;         /* trainer_spec.byte_fallback */
    int add_dummy_prefix;      /* normalizer_spec.add_dummy_prefix (default 1) */
    char normalizer[64];       /* normalizer_spec.name ("" when absent) */
    size_t charsmap_bytes;     /* normalizer_spec.precompiled_charsmap length (0: none) */
} fl_spm_model;

/* Whether buf starts like a ModelProto: field 1 (pieces) with a non-empty length. A llama2.c
 * tokenizer .bin would need a max token length of 266 or more to start so. */
int fl_spm_model_sniff(const unsigned char *buf, size_t len);

/* Parses a ModelProto; errors name `path`, the byte offset and the field (pieces[12].score). */
int fl_spm_model_parse(const unsigned char *buf, size_t len, const char *path, fl_spm_model *out);
void fl_spm_model_free(fl_spm_model *m);

#endif
