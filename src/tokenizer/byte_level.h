/* byte_level.h — the GPT-2 byte-level map (transformers' bytes_to_unicode) both ways: each byte of
 * a byte-level BPE token is stored as one printable code point. Used to read vocab and merges
 * (load_hf.c, tokenizer.c), to decode (decode.c) and to show tokens (vocab_view.c).
 * Not the byte-level pre-tokenizer or decoder steps (pretokenize.c, decode.c).
 */
#ifndef FL_TOKENIZER_BYTE_LEVEL_H
#define FL_TOKENIZER_BYTE_LEVEL_H

#include <stddef.h>
#include <stdint.h>

/* byte_to_cp[b]: the code point byte b is written as — b itself for the printable bytes 33-126,
 * 161-172, 174-255, else 256, 257, ... in byte order (the 68 others: 256-323). */
void fl_byte_level_tables(uint32_t byte_to_cp[256]);
/* Converts a byte-level token string (UTF-8, len bytes) into raw bytes: out (room for len bytes)
 * and *out_len. Returns 0 when a character is not in the map (out then holds a prefix). */
int fl_byte_level_to_bytes(const char *s, size_t len, char *out, size_t *out_len);

#endif
