/* tokenizer_parity.h — the parity check of a C tokenizer against a fixture of Hugging Face's ids
 * (tests/fixtures/tokenizer/<name>.jsonl, written by tools/make_tokenizer_fixtures.py and
 * tools/make_mistral_tokenizers.py): every string's ids with and without special tokens, its
 * offsets where the fixture has them, its decode, and every decode case. Shared by the tests of the
 * ../shared models (test_tokenizer.c) and of the converted Mistral tokenizers
 * (test_tokenizer_mistral.c). Not a loader: the caller brings the tokenizer.
 */
#ifndef FL_TEST_TOKENIZER_PARITY_H
#define FL_TEST_TOKENIZER_PARITY_H

#include "tokenizer/tokenizer.h"

/* Checks every line of tests/fixtures/tokenizer/<name>.jsonl against `tok`, prints "NAME: N strings
 * (...), N mismatches" and the first mismatches, and records a failure for any mismatch or when the
 * fixture holds 50 strings or fewer. */
void tokenizer_parity_check(fl_tokenizer *tok, const char *name);

#endif
