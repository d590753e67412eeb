/* preference_data.h — preference rows (TRL's formats) to the two token sequences of a pair, as
 * TRL 1.16's DPOTrainer builds them (dpo_trainer.py: _prepare_dataset, DataCollatorForPreference):
 *
 *   standard        {"prompt": str, "chosen": str, "rejected": str}
 *   conversational  {"prompt": [messages], "chosen": [messages], "rejected": [messages]}
 *                   (+ optional "tools" (a list, or a JSON string of one) and "chat_template_kwargs")
 *   implicit prompt either form without "prompt": the prompt is the longest common prefix of chosen
 *                   and rejected (characters, or whole messages), as trl.extract_prompt takes it.
 *
 * Standard rows: the tokenizer's EOS string is appended to each completion that does not already
 * end with it; prompt and prompt+completion are each tokenized as one string with the tokenizer's
 * special tokens (HF add_special_tokens=True: BOS where the post-processor adds it).
 * Conversational rows: the prompt rendered with add_generation_prompt=True, prompt+completion
 * without, both tokenized without special tokens; no EOS added (the template's end of turn is
 * part of the completion). Either way the prompt is the shorter common prefix of its ids with
 * prompt+chosen's and with prompt+rejected's (a token merging across the boundary moves into both
 * completions). A pair whose prompt alone fills max_length is dropped (FL_PREF_DROPPED); otherwise
 * each sequence keeps its first max_length tokens (TRL's keep_start).
 *
 * ORPO and CPO (SimPO) tokenize as their trainers' tokenize_row does (FL_PREF_TOKENIZE_ORPO):
 * conversational rows are first rendered to text (trl.maybe_apply_chat_template: the prompt with the
 * generation prompt, cut to its common characters with prompt+chosen and prompt+rejected, each
 * completion the rest of its text); then the prompt and prompt+completion are tokenized without
 * special tokens, the completion starting where the prompt's ids end in prompt+completion's (one
 * token earlier when the prompt's last token merged: more than one differing prompt token between
 * the two sides is an error, as in TRL); the BOS id is put before each prompt that does not start
 * with it, the EOS id after each completion that does not end with it; a completion past max_length
 * is cut to max_length minus its prompt. TRL keeps a prompt that fills max_length and then averages
 * over an empty completion (NaN); such pairs are dropped here (FL_PREF_DROPPED) instead. A prompt
 * ending with an assistant message (TRL: continue_final_message) is refused.
 * Not here: the losses, batching, the trainer.
 */
#ifndef FL_TRAIN_PREFERENCE_DATA_H
#define FL_TRAIN_PREFERENCE_DATA_H

#include <jansson.h>
#include <stdint.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "train/data.h"
#include "train/preference_loss.h"

enum { FL_PREF_DROPPED = 1 }; // a return value of fl_pref_encode_row: not an error, a counted skip

typedef struct {
    int32_t *ids[2];   // [0] prompt + chosen, [1] prompt + rejected (truncated to max_length)
    int n[2];          // tokens in each
    int prompt_len[2]; // the prompt's tokens at the start of each: equal under DPO's rules; under ORPO's each
                       // side keeps the prompt ids of its own prompt + completion tokenization
} fl_pref_pair;        // completion mask of sequence s: positions t with prompt_len[s] <= t < n[s]

typedef enum {
    FL_PREF_TOKENIZE_DPO,  // DPOTrainer's rules (above): dpo, ipo
    FL_PREF_TOKENIZE_ORPO, // ORPOTrainer's and CPOTrainer's tokenize_row (below): orpo, simpo
} fl_pref_tokenization;

/* The tokenization an objective's trainer uses: ORPO's rules for orpo and simpo, DPO's otherwise. */
static inline fl_pref_tokenization fl_pref_rules_for(fl_pref_objective o) {
    return o == FL_PREF_ORPO || o == FL_PREF_SIMPO ? FL_PREF_TOKENIZE_ORPO : FL_PREF_TOKENIZE_DPO;
}

typedef struct {
    const fl_chat_template *chat_template; // conversational rows; NULL: the tokenizer folder's own
    int64_t chat_now;                      // strftime_now's time (0: the clock)
    int max_length;                        // 0: no limit
    fl_pref_tokenization rules;
} fl_pref_options;

/* One row (a JSON object) to a pair. 0: *out filled (free with fl_pref_pair_free);
 * FL_PREF_DROPPED: the prompt fills max_length (nothing allocated); FL_ERR_INPUT: the reason, naming
 * the field, in fl_last_error(). */
int fl_pref_encode_row(json_t *row, fl_tokenizer *tok, const fl_pref_options *opt, fl_pref_pair *out);
void fl_pref_pair_free(fl_pref_pair *p);

/* ---- a dataset of pairs (data_preference.c) ---- */

typedef struct {
    fl_pref_pair *pairs;
    size_t n, cap;
    size_t n_rows;     // rows read (non-blank JSONL lines, array elements)
    size_t n_bad;      // rows skipped as bad input (reported as path:line: skipped: why)
    size_t n_dropped;  // pairs whose prompt fills max_length (counted, said once)
} fl_pref_set;

/* Reads the rows of every file `spec` names (a file, a folder's .jsonl/.json, a glob; JSONL or one
 * JSON array) into *set (zero-initialized first; appends). Each row's field renames (d->fields) are
 * applied, then fl_pref_encode_row. Bad rows are reported and skipped as SFT data's are (d->strict
 * stops at the first; a file with none usable is one error line); drops are counted. */
int fl_pref_set_load(fl_pref_set *set, const char *spec, fl_tokenizer *tok, const fl_pref_options *po,
                     const fl_data_options *d);
void fl_pref_set_free(fl_pref_set *set);
/* A digest of the pairs' tokens (a resume compares it), continuing h (0: start). */
uint64_t fl_pref_set_digest(const fl_pref_set *set, uint64_t h);

#endif
