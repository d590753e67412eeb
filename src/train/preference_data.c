/* preference_data.c — a preference row to its pair of token sequences, as TRL's DPOTrainer
 * tokenizes it (preference_data.h has the rules). */
#include "train/preference_data.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "template/template.h"

static const char *const SIDE[2] = {"chosen", "rejected"};

/* ---- the row's shape ---- */

static int is_messages(json_t *v) {
    json_t *first = json_array_get(v, 0);
    return json_is_array(v) && json_is_object(first) && json_object_get(first, "role");
}

/* Checks that prompt (when present), chosen and rejected are all strings or all message lists;
 * *conversational says which. */
static int row_shape(json_t *row, int *conversational) {
    if (!json_is_object(row)) return fl_input_error("a preference row must be a JSON object with \"chosen\" and \"rejected\"");
    json_t *c = json_object_get(row, "chosen"), *r = json_object_get(row, "rejected"), *p = json_object_get(row, "prompt");
    for (int s = 0; s < 2; s++)
        if (!json_object_get(row, SIDE[s])) return fl_input_error("field '%s': missing (a preference row has \"chosen\" and \"rejected\")", SIDE[s]);
    *conversational = is_messages(c);
    const char *want = *conversational ? "a list of messages, as 'chosen'" : "a string, as 'chosen'";
    if (!*conversational && !json_is_string(c)) return fl_input_error("field 'chosen': expected a string or a list of {\"role\", \"content\"} messages");
    if (*conversational ? !json_is_array(r) : !json_is_string(r)) return fl_input_error("field 'rejected': expected %s", want);
    if (p && (*conversational ? !json_is_array(p) : !json_is_string(p))) return fl_input_error("field 'prompt': expected %s", want);
    if (json_equal(c, r)) return fl_input_error("field 'rejected': the same as 'chosen' (a pair teaches nothing when both sides are equal)");
    return 0;
}

/* ---- trl.extract_prompt: the longest common prefix when a row has no prompt ---- */

/* Byte offset of code point `idx` of s (Python's index: negative counts from the end). */
static size_t cp_offset(const char *s, size_t n, long idx) {
    if (idx < 0) {
        long count = 0;
        for (size_t i = 0; i < n; i++) count += ((unsigned char)s[i] & 0xC0) != 0x80;
        idx = count + idx < 0 ? 0 : count + idx;
    }
    size_t at = 0;
    for (long k = 0; k < idx && at < n; k++)
        do at++; while (at < n && ((unsigned char)s[at] & 0xC0) == 0x80);
    return at;
}

/* The code point at byte `at` (its bytes [at, *end)). */
static size_t cp_end(const char *s, size_t n, size_t at) {
    do at++; while (at < n && ((unsigned char)s[at] & 0xC0) == 0x80);
    return at;
}

/* Python's loop: the first index where chosen and rejected differ (one back when the character
 * before it is a space); without a difference, the last index of the shorter one. */
static int split_text(const char *c, size_t nc, const char *r, size_t nr, long *idx) {
    if (!nc || !nr) return fl_input_error("field '%s': empty, so no prompt can be taken from the common start of 'chosen' and 'rejected' (give a \"prompt\")", nc ? "rejected" : "chosen");
    size_t a = 0, b = 0;
    long i = 0, last = -1;
    while (a < nc && b < nr) {
        size_t ea = cp_end(c, nc, a), eb = cp_end(r, nr, b);
        if (ea - a != eb - b || memcmp(c + a, r + b, ea - a)) {
            size_t prev = cp_offset(c, nc, i - 1); // chosen[idx - 1], Python's [-1] when idx is 0
            *idx = cp_end(c, nc, prev) - prev == 1 && c[prev] == ' ' ? i - 1 : i;
            return 0;
        }
        last = i++;
        a = ea;
        b = eb;
    }
    *idx = last;
    return 0;
}

static int split_messages(json_t *c, json_t *r, long *idx) {
    size_t n = json_array_size(c) < json_array_size(r) ? json_array_size(c) : json_array_size(r);
    if (!n) return fl_input_error("field '%s': empty, so no prompt can be taken from the common start of 'chosen' and 'rejected' (give a \"prompt\")", json_array_size(c) ? "rejected" : "chosen");
    for (size_t i = 0; i < n; i++)
        if (!json_equal(json_array_get(c, i), json_array_get(r, i))) { *idx = (long)i; return 0; }
    *idx = (long)n - 1;
    return 0;
}

static json_t *list_slice(json_t *list, size_t from, size_t to) {
    json_t *out = json_array();
    for (size_t i = from; i < to && i < json_array_size(list); i++) json_array_append(out, json_array_get(list, i));
    return out;
}

/* prompt / completions of the row as new references (extracted when the row has no prompt). */
static int row_parts(json_t *row, int conversational, json_t **prompt, json_t *comp[2]) {
    json_t *c = json_object_get(row, "chosen"), *r = json_object_get(row, "rejected"), *p = json_object_get(row, "prompt");
    if (p) {
        *prompt = json_incref(p);
        comp[0] = json_incref(c);
        comp[1] = json_incref(r);
        return 0;
    }
    long idx = 0;
    if (conversational) {
        FL_TRY(split_messages(c, r, &idx));
        *prompt = list_slice(c, 0, (size_t)idx);
        comp[0] = list_slice(c, (size_t)idx, json_array_size(c));
        comp[1] = list_slice(r, (size_t)idx, json_array_size(r));
        return 0;
    }
    const char *cs = json_string_value(c), *rs = json_string_value(r);
    size_t nc = json_string_length(c), nr = json_string_length(r);
    FL_TRY(split_text(cs, nc, rs, nr, &idx));
    size_t pc = cp_offset(cs, nc, idx), pr = cp_offset(rs, nr, idx); // chosen[:idx], chosen[idx:], rejected[idx:]
    *prompt = json_stringn(cs, pc);
    comp[0] = json_stringn(cs + pc, nc - pc);
    comp[1] = json_stringn(rs + pr, nr - pr);
    return 0;
}

/* ---- tokenizing ---- */

/* a + b tokenized as one string (flags: fl_tokenizer_encode's) */
static int encode_text(fl_tokenizer *tok, const char *a, size_t na, const char *b, size_t nb, int flags, fl_token_ids *ids) {
    char *s = fl_malloc(na + nb + 1);
    if (na) memcpy(s, a, na);
    if (nb) memcpy(s + na, b, nb);
    memset(ids, 0, sizeof *ids);
    int rc = fl_tokenizer_encode(tok, s, na + nb, flags, ids);
    free(s);
    return rc;
}

static int standard_ids(fl_tokenizer *tok, json_t *prompt, json_t *comp[2], fl_token_ids ids[3]) {
    int32_t eos = fl_tokenizer_eos_id(tok);
    char *eos_text = NULL;
    size_t n_eos = 0;
    if (eos < 0 || fl_tokenizer_decode(tok, &eos, 1, 0, &eos_text, &n_eos))
        return fl_input_error("standard preference rows end each completion with the tokenizer's eos_token, and this tokenizer has none (tokenizer_config.json)");
    const char *p = json_string_value(prompt);
    size_t np = json_string_length(prompt);
    int rc = encode_text(tok, p, np, NULL, 0, FL_ENCODE_ADD_SPECIAL, &ids[0]);
    for (int s = 0; s < 2 && !rc; s++) {
        const char *c = json_string_value(comp[s]);
        size_t nc = json_string_length(comp[s]);
        int has_eos = nc >= n_eos && !memcmp(c + nc - n_eos, eos_text, n_eos);
        char *full = fl_malloc(nc + n_eos + 1);
        memcpy(full, c, nc);
        memcpy(full + nc, eos_text, has_eos ? 0 : n_eos);
        rc = encode_text(tok, p, np, full, nc + (has_eos ? 0 : n_eos), FL_ENCODE_ADD_SPECIAL, &ids[1 + s]);
        free(full);
    }
    free(eos_text);
    return rc;
}

/* The row's tools (a list, or TRL's JSON string of one; *parsed owns a parsed one) and
 * chat_template_kwargs into *in, and the template (*own when the folder's own is loaded here). */
static int chat_setup(json_t *row, fl_tokenizer *tok, const fl_pref_options *opt, fl_chat_input *in, json_t **parsed,
                      const fl_chat_template **ct, fl_chat_template **own) {
    memset(in, 0, sizeof *in);
    in->now = opt->chat_now;
    *parsed = NULL;
    *own = NULL;
    json_t *tools = json_object_get(row, "tools"), *kwargs = json_object_get(row, "chat_template_kwargs");
    if (json_is_string(tools)) { // TRL json.loads a tools string
        *parsed = json_loadb(json_string_value(tools), json_string_length(tools), JSON_DECODE_ANY, NULL);
        if (!json_is_array(*parsed)) { json_decref(*parsed); *parsed = NULL; return fl_input_error("field 'tools': a string that is not a JSON list of tool schemas"); }
        tools = *parsed;
    }
    if (tools && !json_is_null(tools) && !json_is_array(tools)) return fl_input_error("field 'tools': expected a list");
    if (kwargs && !json_is_null(kwargs) && !json_is_object(kwargs)) return fl_input_error("field 'chat_template_kwargs': expected an object");
    in->tools = json_is_array(tools) ? tools : NULL;
    in->kwargs = json_is_object(kwargs) ? kwargs : NULL;
    *ct = opt->chat_template;
    if (*ct) return 0;
    FL_TRY(fl_chat_template_for(own, tok, NULL, 0));
    *ct = *own;
    return 0;
}

static int chat_ids(fl_tokenizer *tok, const fl_chat_template *ct, const fl_chat_input *base, json_t *messages, int gen, fl_token_ids *ids) {
    fl_chat_input in = *base;
    in.messages = messages;
    in.add_generation_prompt = gen;
    fl_chat_rendered r;
    FL_TRY(fl_chat_encode(tok, ct, &in, &r));
    *ids = r.ids;
    ids->want_offsets = 0;
    free(ids->offsets);
    ids->offsets = NULL;
    memset(&r.ids, 0, sizeof r.ids);
    fl_chat_rendered_free(&r);
    return 0;
}

static int conversational_ids(json_t *row, fl_tokenizer *tok, const fl_pref_options *opt, json_t *prompt, json_t *comp[2], fl_token_ids ids[3]) {
    fl_chat_input in;
    json_t *parsed;
    const fl_chat_template *ct = NULL;
    fl_chat_template *own;
    int rc = chat_setup(row, tok, opt, &in, &parsed, &ct, &own);
    if (!rc) rc = chat_ids(tok, ct, &in, prompt, 1, &ids[0]);
    for (int s = 0; s < 2 && !rc; s++) {
        json_t *all = json_copy(prompt);
        json_array_extend(all, comp[s]);
        rc = chat_ids(tok, ct, &in, all, 0, &ids[1 + s]);
        json_decref(all);
    }
    fl_chat_template_free(own);
    json_decref(parsed);
    return rc;
}

static int common_prefix(const fl_token_ids *a, const fl_token_ids *b) {
    size_t n = 0;
    while (n < a->n && n < b->n && a->ids[n] == b->ids[n]) n++;
    return (int)n;
}

/* ---- ORPO's and CPO's tokenize_row ---- */

/* The common prefix of a and b in whole characters (Python's takewhile over code points). */
static size_t common_chars(const char *a, size_t na, const char *b, size_t nb) {
    size_t n = 0;
    while (n < na && n < nb && a[n] == b[n]) n++;
    while (n > 0 && ((n < na && ((unsigned char)a[n] & 0xC0) == 0x80) || (n < nb && ((unsigned char)b[n] & 0xC0) == 0x80))) n--;
    return n;
}

/* trl.maybe_apply_chat_template on a conversational row: texts[0] the prompt, [1], [2] the completions. */
static int render_texts(json_t *row, fl_tokenizer *tok, const fl_pref_options *opt, json_t *prompt, json_t *comp[2], fl_tpl_output texts[3]) {
    json_t *last = json_array_get(prompt, json_array_size(prompt) ? json_array_size(prompt) - 1 : 0);
    const char *role = json_string_value(json_object_get(last, "role"));
    if (!role) return fl_input_error("field 'prompt': empty or its last message has no role (the prompt ends with a user or tool message)");
    if (!strcmp(role, "assistant"))
        return fl_input_error("field 'prompt': ends with an assistant message (TRL continues it: continue_final_message), which is not supported; end the prompt with a user or tool message");
    if (strcmp(role, "user") && strcmp(role, "tool"))
        return fl_input_error("field 'prompt': the last message's role is '%s' (expected user, tool or assistant)", role);
    fl_chat_input in;
    json_t *parsed;
    const fl_chat_template *ct = NULL;
    fl_chat_template *own;
    int rc = chat_setup(row, tok, opt, &in, &parsed, &ct, &own);
    in.messages = prompt;
    in.add_generation_prompt = 1;
    if (!rc) rc = fl_chat_template_render(ct, &in, &texts[0]);
    for (int s = 0; s < 2 && !rc; s++) {
        json_t *all = json_copy(prompt);
        json_array_extend(all, comp[s]);
        in.messages = all;
        in.add_generation_prompt = 0;
        rc = fl_chat_template_render(ct, &in, &texts[1 + s]);
        json_decref(all);
        if (!rc) texts[0].len = common_chars(texts[0].text, texts[0].len, texts[1 + s].text, texts[1 + s].len);
    }
    for (int s = 0; s < 2 && !rc; s++) { // each completion: the rest of its text after the prompt
        memmove(texts[1 + s].text, texts[1 + s].text + texts[0].len, texts[1 + s].len - texts[0].len);
        texts[1 + s].len -= texts[0].len;
    }
    fl_chat_template_free(own);
    json_decref(parsed);
    return rc;
}

static int orpo_encode(json_t *row, fl_tokenizer *tok, const fl_pref_options *opt, int conversational, json_t *prompt,
                       json_t *comp[2], fl_pref_pair *out) {
    int32_t bos = fl_tokenizer_bos_id(tok), eos = fl_tokenizer_eos_id(tok);
    if (eos < 0) return fl_input_error("ORPO/SimPO rows end each completion with the tokenizer's eos_token, and this tokenizer has none (tokenizer_config.json)");
    fl_tpl_output texts[3];
    memset(texts, 0, sizeof texts);
    const char *t[3];
    size_t nt[3];
    int rc = 0;
    if (conversational) {
        rc = render_texts(row, tok, opt, prompt, comp, texts);
        for (int k = 0; k < 3; k++) { t[k] = texts[k].text; nt[k] = texts[k].len; }
    } else {
        t[0] = json_string_value(prompt);
        nt[0] = json_string_length(prompt);
        for (int s = 0; s < 2; s++) { t[1 + s] = json_string_value(comp[s]); nt[1 + s] = json_string_length(comp[s]); }
    }
    fl_token_ids p = {0}, full[2];
    memset(full, 0, sizeof full);
    if (!rc) rc = encode_text(tok, t[0], nt[0], NULL, 0, 0, &p);
    int start[2] = {0, 0};
    for (int s = 0; s < 2 && !rc; s++) { // build_tokenized_answer
        rc = encode_text(tok, t[0], nt[0], t[1 + s], nt[1 + s], 0, &full[s]);
        if (rc) break;
        if (full[s].n < p.n) { rc = fl_input_error("field '%s': prompt + completion tokenizes to fewer ids than the prompt alone (TRL refuses such a row)", SIDE[s]); break; }
        start[s] = (int)p.n;
        if (p.n && memcmp(p.ids, full[s].ids, sizeof(int32_t) * p.n)) start[s]--; // the prompt's last token merged
    }
    if (!rc) {
        int differ = abs(start[0] - start[1]);
        for (int k = 0; k < start[0] && k < start[1]; k++) differ += full[0].ids[k] != full[1].ids[k];
        if (differ > 1) rc = fl_input_error("fields 'chosen' and 'rejected': their prompt ids differ in more than the last token (TRL refuses such a row)");
    }
    for (int s = 0; s < 2 && !rc; s++) {
        int add_bos = bos >= 0 && (start[s] == 0 || full[s].ids[0] != bos);
        int n_answer = (int)full[s].n - start[s];
        int add_eos = n_answer == 0 || full[s].ids[full[s].n - 1] != eos;
        int n_prompt = start[s] + add_bos;
        n_answer += add_eos;
        if (opt->max_length > 0 && n_prompt + n_answer > opt->max_length) n_answer = opt->max_length > n_prompt ? opt->max_length - n_prompt : 0;
        if (n_answer == 0) { rc = FL_PREF_DROPPED; break; }
        int32_t *ids = out->ids[s] = fl_malloc(sizeof(int32_t) * (size_t)(n_prompt + n_answer + 1));
        int k = 0;
        if (add_bos) ids[k++] = bos;
        for (size_t i = 0; i < full[s].n && k < n_prompt + n_answer; i++) ids[k++] = full[s].ids[i];
        if (add_eos && k < n_prompt + n_answer) ids[k++] = eos;
        out->n[s] = k;
        out->prompt_len[s] = n_prompt;
    }
    if (rc) fl_pref_pair_free(out);
    fl_token_ids_free(&p);
    fl_token_ids_free(&full[0]);
    fl_token_ids_free(&full[1]);
    for (int k = 0; k < 3; k++) fl_tpl_output_free(&texts[k]);
    return rc;
}

int fl_pref_encode_row(json_t *row, fl_tokenizer *tok, const fl_pref_options *opt, fl_pref_pair *out) {
    memset(out, 0, sizeof *out);
    int conversational = 0;
    FL_TRY(row_shape(row, &conversational));
    json_t *prompt = NULL, *comp[2] = {NULL, NULL};
    fl_token_ids ids[3];
    memset(ids, 0, sizeof ids);
    int rc = row_parts(row, conversational, &prompt, comp);
    if (!rc && opt->rules == FL_PREF_TOKENIZE_ORPO) {
        rc = orpo_encode(row, tok, opt, conversational, prompt, comp, out);
        json_decref(prompt);
        json_decref(comp[0]);
        json_decref(comp[1]);
        return rc;
    }
    if (!rc) rc = conversational ? conversational_ids(row, tok, opt, prompt, comp, ids) : standard_ids(tok, prompt, comp, ids);
    if (!rc) {
        int a = common_prefix(&ids[0], &ids[1]), b = common_prefix(&ids[0], &ids[2]);
        out->prompt_len[0] = out->prompt_len[1] = a < b ? a : b;
        if (opt->max_length > 0 && out->prompt_len[0] >= opt->max_length) rc = FL_PREF_DROPPED;
        for (int s = 0; s < 2 && !rc; s++) {
            out->n[s] = (int)ids[1 + s].n;
            if (opt->max_length > 0 && out->n[s] > opt->max_length) out->n[s] = opt->max_length;
            out->ids[s] = fl_malloc(sizeof(int32_t) * ((size_t)out->n[s] + 1));
            if (out->n[s]) memcpy(out->ids[s], ids[1 + s].ids, sizeof(int32_t) * (size_t)out->n[s]);
        }
        if (rc) fl_pref_pair_free(out);
    }
    for (int k = 0; k < 3; k++) fl_token_ids_free(&ids[k]);
    json_decref(prompt);
    json_decref(comp[0]);
    json_decref(comp[1]);
    return rc;
}

void fl_pref_pair_free(fl_pref_pair *p) {
    free(p->ids[0]);
    free(p->ids[1]);
    memset(p, 0, sizeof *p);
}
