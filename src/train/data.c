/* data.c — JSONL, JSON-array and binary-token datasets to documents (ids + loss mask), and the
 * format detection that sends plain text to data_text.c; see data.h. Bad records go through
 * data_report.c. */
#include "train/data.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/error.h"
#include "io/file_util.h"
#include "tokenizer/text_check.h"
#include "train/data_internal.h"

static const char *const format_names[FL_DATA_N_FORMATS] = {"auto", "text", "prompt", "messages", "alpaca", "tokens",
                                                            "text-file", "text-paragraphs", "text-lines"};

int fl_data_format_parse(const char *name, fl_data_format *out) {
    for (int i = 0; i < FL_DATA_N_FORMATS; i++)
        if (!strcmp(name, format_names[i])) { *out = (fl_data_format)i; return 0; }
    return fl_input_error("--format: '%s' is not known (expected auto, text, prompt, messages, alpaca, tokens, "
                          "text-file, text-paragraphs or text-lines)", name);
}

const char *fl_data_format_name(fl_data_format f) { return (unsigned)f < FL_DATA_N_FORMATS ? format_names[f] : "?"; }

fl_data_options fl_data_options_default(void) {
    fl_data_options o = {.format = FL_DATA_AUTO, .strict = 0, .max_line_bytes = (size_t)64 << 20, .eos_id = -1,
                         .vocab_size = 0, .max_reported = 10, .log = NULL};
    return o;
}

/* ---- documents ------------------------------------------------------------------------------ */

void fl_data_push(fl_dataset *ds, fl_doc doc) {
    if (ds->n_docs == ds->cap) {
        ds->cap = ds->cap ? ds->cap * 2 : 256;
        fl_doc *nd = realloc(ds->docs, ds->cap * sizeof *nd);
        if (!nd) fl_die("out of memory growing the dataset to %zu documents", ds->cap);
        ds->docs = nd;
    }
    ds->docs[ds->n_docs++] = doc;
    ds->n_tokens += (size_t)doc.n;
    for (int i = 1; i < doc.n; i++) ds->n_targets += doc.mask[i];
}

void fl_dataset_add(fl_dataset *ds, const int32_t *ids, const uint8_t *mask, int n) {
    fl_doc d = {.ids = fl_malloc(sizeof(int32_t) * (size_t)n), .mask = fl_malloc((size_t)n), .n = n};
    memcpy(d.ids, ids, sizeof(int32_t) * (size_t)n);
    if (mask) memcpy(d.mask, mask, (size_t)n);
    else memset(d.mask, 1, (size_t)n);
    fl_data_push(ds, d);
}

void fl_dataset_free(fl_dataset *ds) {
    for (size_t i = 0; i < ds->n_docs; i++) { free(ds->docs[i].ids); free(ds->docs[i].mask); }
    free(ds->docs);
    memset(ds, 0, sizeof *ds);
}

/* ---- one JSON line --------------------------------------------------------------------------- */

/* A string field: returns its value and length, or NULL (with an error) when absent / mistyped /
 * empty (when must_be_nonempty). `optional` allows absence (returns "" then). */
static const char *string_field(json_t *root, const char *key, int optional, int nonempty, size_t *len, int *status) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (optional) { *len = 0; return ""; }
        *status = fl_input_error("field '%s': missing", key);
        return NULL;
    }
    if (!json_is_string(v)) { *status = fl_input_error("field '%s': expected a string", key); return NULL; }
    *len = json_string_length(v);
    if (nonempty && *len == 0) { *status = fl_input_error("field '%s': empty string", key); return NULL; }
    return json_string_value(v);
}

/* Encodes prompt+completion as one string; mask = tokens whose bytes reach into the completion. */
static int encode_prompt_completion(fl_tokenizer *tok, const char *prompt, size_t plen, const char *completion,
                                    size_t clen, const fl_data_options *opt, fl_doc *doc) {
    char *text = fl_malloc(plen + clen + 1);
    memcpy(text, prompt, plen);
    memcpy(text + plen, completion, clen);
    fl_token_ids ids = {0};
    ids.want_offsets = 1;
    int status = fl_tokenizer_encode(tok, text, plen + clen, FL_ENCODE_ADD_SPECIAL, &ids);
    free(text);
    if (status) { fl_token_ids_free(&ids); return status; }
    int extra = opt->eos_id >= 0;
    doc->n = (int)ids.n + extra;
    doc->ids = fl_malloc(sizeof(int32_t) * (size_t)doc->n);
    doc->mask = fl_malloc((size_t)doc->n);
    for (size_t i = 0; i < ids.n; i++) {
        doc->ids[i] = ids.ids[i];
        doc->mask[i] = ids.offsets[2 * i + 1] > plen;
    }
    if (extra) { doc->ids[ids.n] = opt->eos_id; doc->mask[ids.n] = 1; }
    fl_token_ids_free(&ids);
    return 0;
}

static const char alpaca_with_input[] =
    "Below is an instruction that describes a task, paired with an input that provides further context. "
    "Write a response that appropriately completes the request.\n\n### Instruction:\n%s\n\n### Input:\n%s\n\n### Response:\n";
static const char alpaca_no_input[] =
    "Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n%s\n\n### Response:\n";

int fl_data_parse_field_map(const char *spec, fl_data_options *opt) {
    opt->n_field_map = 0;
    if (!spec || !*spec) return 0;
    char *copy = strdup(spec), *save = NULL;
    int status = 0;
    for (char *item = strtok_r(copy, ",", &save); item && !status; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1] || strlen(item) >= 64 || strlen(eq + 1) >= 64)
            status = fl_input_error("--fields: '%s' is not ours=theirs (e.g. prompt=question,completion=answer)", item);
        else if (opt->n_field_map == FL_DATA_MAX_FIELD_MAP)
            status = fl_input_error("--fields: more than %d renames", FL_DATA_MAX_FIELD_MAP);
        else {
            *eq = 0;
            snprintf(opt->field_to[opt->n_field_map], 64, "%s", item);
            snprintf(opt->field_from[opt->n_field_map], 64, "%s", eq + 1);
            opt->n_field_map++;
        }
    }
    free(copy);
    return status;
}

static int parse_record(json_t *root, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc);

int fl_data_parse_line(const char *line, size_t len, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc) {
    memset(doc, 0, sizeof *doc);
    if (!tok) return fl_input_error("a JSONL dataset needs the model's tokenizer (none was loaded)");
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return fl_input_error("invalid JSON at column %d: %s", jerr.column, jerr.text);
    int status = parse_record(root, tok, opt, doc);
    json_decref(root);
    return status;
}

/* A record without any field we know: the error names the record's own keys and the --fields
 * rename that would read them (gsm8k's question/answer: prompt=question,completion=answer). */
static int no_known_field(json_t *root) {
    const char *keys[2] = {0}; /* the first two string-valued keys */
    size_t n = 0, n_strings = 0;
    char have[200] = "";
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (n_strings < 2 && json_is_string(v)) keys[n_strings++] = key;
        size_t at = strlen(have);
        if (at < sizeof have - 8) snprintf(have + at, sizeof have - at, "%s'%.40s'", n ? ", " : "", key);
        n++;
    }
    char rename[200] = "";
    if (keys[0] && !keys[1]) snprintf(rename, sizeof rename, "; --fields text=%.40s reads it", keys[0]);
    else if (keys[1]) snprintf(rename, sizeof rename, "; --fields prompt=%.40s,completion=%.40s reads them", keys[0], keys[1]);
    return fl_input_error("no known field: expected 'text', 'prompt'+'completion', 'messages' or 'instruction'+'output' "
                          "(this record has %s%s)%s", n ? "" : "no fields", have, rename);
}

/* Ids in the vocabulary and at least one target, else the document is freed and the reason given. */
static int check_doc(const fl_data_options *opt, fl_doc *doc) {
    int status = 0, targets = 0;
    for (int i = 1; i < doc->n; i++) targets += doc->mask[i];
    for (int i = 0; i < doc->n && !status; i++)
        if (doc->ids[i] < 0 || (opt->vocab_size > 0 && doc->ids[i] >= opt->vocab_size))
            status = fl_input_error("token id %d is outside the model's vocabulary (%d)", doc->ids[i], opt->vocab_size);
    if (!status && (doc->n < 2 || targets == 0)) status = fl_input_error("no target tokens (nothing to learn)");
    if (status) { free(doc->ids); free(doc->mask); memset(doc, 0, sizeof *doc); }
    return status;
}

int fl_data_text_doc(const char *text, size_t len, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc) {
    memset(doc, 0, sizeof *doc);
    if (!tok) return fl_input_error("plain text needs the model's tokenizer (none was loaded)");
    if (!len) return fl_input_error("empty text");
    FL_TRY(encode_prompt_completion(tok, "", 0, text, len, opt, doc));
    return check_doc(opt, doc);
}

/* One record (a JSON value) to a document; root is borrowed (renamed fields are added to it). */
static int parse_record(json_t *root, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc) {
    memset(doc, 0, sizeof *doc);
    int status = 0;
    fl_data_format f = opt->format;
    if (json_is_object(root))
        for (int i = 0; i < opt->n_field_map; i++) {
            json_t *v = json_object_get(root, opt->field_from[i]);
            if (v && !json_object_get(root, opt->field_to[i])) json_object_set(root, opt->field_to[i], v);
        }
    /* ShareGPT: the conversation under "conversations" (data_chat.c maps its from/value and roles) */
    json_t *conversations = json_is_object(root) ? json_object_get(root, "conversations") : NULL;
    if (conversations && !json_object_get(root, "messages")) json_object_set(root, "messages", conversations);
    if (!json_is_object(root)) {
        status = fl_input_error("expected a JSON object");
    } else if (f == FL_DATA_AUTO) {
        if (json_object_get(root, "messages")) f = FL_DATA_MESSAGES;
        else if (json_object_get(root, "prompt") || json_object_get(root, "completion")) f = FL_DATA_PROMPT;
        else if (json_object_get(root, "instruction") || json_object_get(root, "output")) f = FL_DATA_ALPACA;
        else if (json_object_get(root, "text")) f = FL_DATA_TEXT;
        else status = no_known_field(root);
    }
    if (!status) switch (f) {
    case FL_DATA_TEXT: {
        size_t tl;
        const char *text = string_field(root, "text", 0, 1, &tl, &status);
        if (text) status = encode_prompt_completion(tok, "", 0, text, tl, opt, doc);
        break;
    }
    case FL_DATA_PROMPT: {
        size_t pl, cl;
        const char *p = string_field(root, "prompt", 0, 0, &pl, &status);
        const char *c = p ? string_field(root, "completion", 0, 1, &cl, &status) : NULL;
        if (c) status = encode_prompt_completion(tok, p, pl, c, cl, opt, doc);
        break;
    }
    case FL_DATA_ALPACA: {
        size_t il, nl, ol;
        const char *ins = string_field(root, "instruction", 0, 1, &il, &status);
        const char *inp = ins ? string_field(root, "input", 1, 0, &nl, &status) : NULL;
        const char *out = inp ? string_field(root, "output", 0, 1, &ol, &status) : NULL;
        if (!out) break;
        if (strlen(ins) != il || strlen(inp) != nl) { status = fl_input_error("field 'instruction'/'input': contains a NUL character"); break; }
        size_t cap = sizeof alpaca_with_input + il + nl;
        char *prompt = fl_malloc(cap);
        int plen = nl ? snprintf(prompt, cap, alpaca_with_input, ins, inp) : snprintf(prompt, cap, alpaca_no_input, ins);
        status = encode_prompt_completion(tok, prompt, (size_t)plen, out, ol, opt, doc);
        free(prompt);
        break;
    }
    case FL_DATA_MESSAGES:
        status = fl_data_encode_messages(root, tok, opt, doc);
        break;
    default:
        status = fl_input_error("format '%s' is not a JSONL shape", fl_data_format_name(f));
    }
    if (!status) return check_doc(opt, doc);
    free(doc->ids);
    free(doc->mask);
    memset(doc, 0, sizeof *doc);
    return status;
}

/* ---- JSONL files ------------------------------------------------------------------------------ */

int fl_data_read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max, int *too_long, int *ended) {
    *len = 0;
    *too_long = 0;
    *ended = 0;
    int c, any = 0;
    while ((c = getc_unlocked(f)) != EOF) {
        any = 1;
        if (c == '\r') {
            int next = getc_unlocked(f);
            if (next != '\n' && next != EOF) ungetc(next, f);
            *ended = 1;
            break;
        }
        if (c == '\n') { *ended = 1; break; }
        if (*too_long) continue;
        if (*len + 1 > max) { *too_long = 1; continue; }
        if (*len + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            char *nb = realloc(*buf, nc);
            if (!nb) { *too_long = 1; continue; }
            *buf = nb;
            *cap = nc;
        }
        (*buf)[(*len)++] = (char)c;
    }
    if (*buf) (*buf)[*len] = 0;
    return any;
}

int fl_data_skip_bom(FILE *f, const char *path) {
    for (long at = 0;; at += 3) {
        unsigned char b[3] = {0};
        size_t n = fread(b, 1, 3, f);
        if (n == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) continue;
        if (!at && n >= 2 && ((b[0] == 0xFF && b[1] == 0xFE) || (b[0] == 0xFE && b[1] == 0xFF)))
            return fl_input_error("%s: UTF-16 or UTF-32 text (byte-order mark %02X %02X); save it as UTF-8", path, b[0], b[1]);
        if (fseek(f, at, SEEK_SET) != 0) return fl_input_error("cannot read %s: %s", path, strerror(errno));
        return 0;
    }
}

static int is_blank(const char *s, size_t len) {
    size_t k = 0;
    while (k < len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) k++;
    return k == len;
}

/* What would read the file, when its first record shows it is not JSON Lines at all (a line that
 * does not even start like JSON); nothing when it is JSON gone wrong (the reason says where). */
static void not_jsonl_hint(const char *line, size_t len, const fl_data_options *opt, char *hint, size_t cap) {
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
    if (k < len && (line[k] == '{' || line[k] == '[')) return;
    int nul = 0, control = 0;
    for (size_t i = 0; i < len; i++) control |= (unsigned char)line[i] < 0x20 && line[i] != '\t' && line[i] != '\f';
    if (control || fl_text_check(line, len, &nul) < len)
        snprintf(hint, cap, "binary data, not text (pre-tokenized data goes in a fastlora tokens file, docs/TRAINING.md)");
    else if (opt->format == FL_DATA_TEXT)
        snprintf(hint, cap, "--format text means JSONL rows {\"text\": ...}; plain text is --format text-file "
                            "(or text-paragraphs, text-lines)");
    else
        snprintf(hint, cap, "plain text? --format text-file reads it as one document (text-paragraphs: one per "
                            "blank-line-separated block, text-lines: one per line; a .txt name reads as text-file)");
}

static int load_jsonl(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt) {
    FILE *f;
    FL_TRY(fl_file_fopen_read(path, FL_FILE_DATASET, &f));
    int status = fl_data_skip_bom(f, path);
    if (status) { fclose(f); return status; }
    fl_data_report r;
    fl_data_report_init(&r, path, opt, "line");
    char *buf = NULL;
    size_t cap = 0, len = 0, lineno = 0;
    int too_long, ended, gave_up = 0;
    while (!status && fl_data_read_line(f, &buf, &cap, &len, opt->max_line_bytes, &too_long, &ended)) {
        lineno++;
        if (!too_long && is_blank(buf, len)) continue;
        ds->n_lines++;
        r.n_records++;
        fl_doc doc;
        int rc = too_long ? fl_input_error("line longer than %zu bytes", opt->max_line_bytes)
                          : fl_data_parse_line(buf, len, tok, opt, &doc);
        if (!rc) { fl_data_push(ds, doc); fl_data_report_good(&r); continue; }
        if (r.n_records == 1 && !too_long) not_jsonl_hint(buf, len, opt, r.hint, sizeof r.hint);
        char where[32];
        snprintf(where, sizeof where, "%zu", lineno);
        status = fl_data_report_bad(&r, where, fl_last_error());
        if (!status) ds->n_bad++;
        if (!r.n_good && r.n_bad >= FL_DATA_GIVE_UP) { gave_up = 1; break; }
    }
    if (!status && ferror(f)) status = fl_input_error("%s: read error", path);
    if (!status) status = fl_data_report_finish(&r, gave_up, lineno ? "only blank lines" : "empty file");
    else fl_data_report_free(&r);
    free(buf);
    fclose(f);
    return status;
}

/* A JSON array of records: errors are reported as path:[index]. */
static int load_json_array(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt) {
    json_t *root;
    FL_TRY(fl_file_load_json(path, FL_FILE_DATASET, JSON_REJECT_DUPLICATES, &root));
    if (!json_is_array(root)) {
        json_decref(root);
        return fl_input_error("%s: expected a JSON array of records", path);
    }
    fl_data_report r;
    fl_data_report_init(&r, path, opt, "record");
    size_t index;
    json_t *item;
    int status = 0;
    json_array_foreach(root, index, item) {
        ds->n_lines++;
        r.n_records++;
        fl_doc doc;
        if (!parse_record(item, tok, opt, &doc)) { fl_data_push(ds, doc); fl_data_report_good(&r); continue; }
        char where[32];
        snprintf(where, sizeof where, "[%zu]", index);
        if ((status = fl_data_report_bad(&r, where, fl_last_error()))) break;
        ds->n_bad++;
    }
    if (!status) status = fl_data_report_finish(&r, 0, "an empty JSON array");
    else fl_data_report_free(&r);
    json_decref(root);
    return status;
}

/* ---- binary tokens ---------------------------------------------------------------------------- */

static int load_tokens(fl_dataset *ds, const char *path, const fl_data_options *opt) {
    FILE *f;
    FL_TRY(fl_file_fopen_read(path, FL_FILE_DATASET, &f));
    struct stat st;
    int status = 0;
    char magic[8];
    uint64_t hdr[2];
    uint64_t *ends = NULL;
    uint32_t *ids = NULL;
    if (fstat(fileno(f), &st) != 0) status = fl_input_error("%s: cannot stat", path);
    else if (fread(magic, 1, 8, f) != 8 || memcmp(magic, FL_TOKENS_MAGIC, 8))
        status = fl_input_error("%s: not a fastlora tokens file (magic \"%s\" expected)", path, FL_TOKENS_MAGIC);
    else if (fread(hdr, 8, 2, f) != 2)
        status = fl_input_error("%s: truncated header", path);
    uint64_t n_docs = hdr[0], n_tok = hdr[1], size = (uint64_t)st.st_size;
    if (!status && (n_docs > size / 8 || n_tok > size / 4 || 24 + 8 * n_docs + 4 * n_tok != size))
        status = fl_input_error("%s: header says %llu documents, %llu tokens: file size %llu does not match", path,
                                (unsigned long long)n_docs, (unsigned long long)n_tok, (unsigned long long)size);
    if (!status) {
        ends = fl_malloc(8 * n_docs + 8);
        ids = fl_malloc(4 * n_tok + 4);
        if (fread(ends, 8, n_docs, f) != n_docs || fread(ids, 4, n_tok, f) != n_tok)
            status = fl_input_error("%s: short read", path);
    }
    uint64_t prev = 0;
    for (uint64_t d = 0; d < n_docs && !status; d++) {
        if (ends[d] < prev || ends[d] > n_tok || ends[d] - prev > 0x7fffffff)
            status = fl_input_error("%s: doc_end[%llu] = %llu is out of order or past n_tokens", path,
                                    (unsigned long long)d, (unsigned long long)ends[d]);
        prev = ends[d];
    }
    if (!status && prev != n_tok) status = fl_input_error("%s: the last doc_end (%llu) is not n_tokens (%llu)", path,
                                                           (unsigned long long)prev, (unsigned long long)n_tok);
    for (uint64_t i = 0; i < n_tok && !status; i++)
        if (ids[i] > 0x7fffffffu || (opt->vocab_size > 0 && ids[i] >= (uint32_t)opt->vocab_size))
            status = fl_input_error("%s: token %llu has id %u, outside the vocabulary (%d)", path, (unsigned long long)i,
                                    ids[i], opt->vocab_size);
    prev = 0;
    for (uint64_t d = 0; d < n_docs && !status; d++) {
        int n = (int)(ends[d] - prev);
        if (n >= 2) fl_dataset_add(ds, (const int32_t *)(ids + prev), NULL, n);
        else ds->n_bad++;
        ds->n_lines++;
        prev = ends[d];
    }
    free(ends);
    free(ids);
    fclose(f);
    return status;
}

int fl_tokens_file_write(const char *path, const fl_dataset *ds) {
    fl_atomic_file f;
    FL_TRY(fl_atomic_file_open(&f, path));
    uint64_t hdr[2] = {ds->n_docs, ds->n_tokens}, end = 0;
    fwrite(FL_TOKENS_MAGIC, 1, 8, f.fp);
    fwrite(hdr, 8, 2, f.fp);
    for (size_t d = 0; d < ds->n_docs; d++) {
        end += (uint64_t)ds->docs[d].n;
        fwrite(&end, 8, 1, f.fp);
    }
    for (size_t d = 0; d < ds->n_docs; d++) fwrite(ds->docs[d].ids, 4, (size_t)ds->docs[d].n, f.fp);
    return fl_atomic_file_commit(&f);
}

/* ---- format detection: one look at the file -------------------------------------------------- */

/* Whether f (at its start) begins with the tokens magic. */
static int has_tokens_magic(FILE *f) {
    char magic[8] = {0};
    return fread(magic, 1, 8, f) == 8 && !memcmp(magic, FL_TOKENS_MAGIC, 8);
}

int fl_data_is_tokens_file(const char *path, const char *format) {
    fl_data_format f = FL_DATA_AUTO;
    if (fl_data_format_parse(format, &f)) return 0;
    if (f != FL_DATA_AUTO) return f == FL_DATA_TOKENS;
    FILE *fp = NULL;
    if (fl_file_fopen_read(path, FL_FILE_DATASET, &fp)) return 0; /* not readable: the loader says why */
    int yes = has_tokens_magic(fp);
    fclose(fp);
    return yes;
}

static int named_txt(const char *path) {
    size_t n = strlen(path);
    return n >= 4 && !strcasecmp(path + n - 4, ".txt");
}

/* Whether the first non-blank line of f after byte-order marks (up to 64 MiB of it) is a JSON
 * object: a .txt file whose first line is one is JSONL under another name. */
static int first_line_is_json_object(FILE *f, const char *path) {
    char *line = NULL;
    size_t cap = 0, len = 0;
    int too_long, ended, yes = 0;
    if (!fl_data_skip_bom(f, path))
        while (fl_data_read_line(f, &line, &cap, &len, (size_t)64 << 20, &too_long, &ended))
            if (too_long || !is_blank(line, len)) {
                json_t *v = json_loadb(line, len, 0, NULL);
                yes = json_is_object(v);
                json_decref(v);
                break;
            }
    free(line);
    return yes;
}

/* Whether the first character of f after byte-order marks and JSON whitespace is '['. */
static int starts_with_bracket(FILE *f, const char *path) {
    int c = 0;
    if (!fl_data_skip_bom(f, path))
        while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r') {}
    return c == '[';
}

/* The format of path under `asked` (fl_data_detect_format's rule) from f, open at its start, or
 * from nothing when f is NULL (an unreadable file); *json_array (when not NULL, for JSON formats)
 * whether the file is one JSON array rather than JSON Lines. */
static fl_data_format detect(FILE *f, const char *path, fl_data_format asked, int *json_array) {
    fl_data_format format = asked;
    if (asked == FL_DATA_AUTO) {
        if (f && has_tokens_magic(f)) format = FL_DATA_TOKENS;
        else if (named_txt(path) && !(f && !fseek(f, 0, SEEK_SET) && first_line_is_json_object(f, path)))
            format = FL_DATA_TEXT_FILE;
    }
    if (json_array)
        *json_array = format != FL_DATA_TOKENS && format < FL_DATA_TEXT_FILE && f && !fseek(f, 0, SEEK_SET) &&
                      starts_with_bracket(f, path);
    return format;
}

fl_data_format fl_data_detect_format(const char *path, fl_data_format asked) {
    if (asked != FL_DATA_AUTO) return asked;
    FILE *f = NULL;
    if (fl_file_fopen_read(path, FL_FILE_DATASET, &f)) f = NULL;
    fl_data_format format = detect(f, path, asked, NULL);
    if (f) fclose(f);
    return format;
}

static int tokens_in_many(const char *path, const char *many) {
    return fl_input_error("%s: a tokens file in %s: give a tokens file alone as --data", path, many);
}

/* One file; `many` names the folder or glob it came from (NULL: given alone), where a tokens file
 * is refused. The file is opened once to check it (no FIFO, device or directory; the size limit)
 * and detect its format, then once by its reader. */
static int load_file(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt,
                     const char *many) {
    if (many && opt->format == FL_DATA_TOKENS) return tokens_in_many(path, many);
    FILE *fp;
    FL_TRY(fl_file_fopen_read(path, FL_FILE_DATASET, &fp));
    int json_array;
    fl_data_format f = detect(fp, path, opt->format, &json_array);
    fclose(fp);
    if (f == FL_DATA_TOKENS && many) return tokens_in_many(path, many);
    if (f == FL_DATA_TOKENS) return load_tokens(ds, path, opt);
    int text = f >= FL_DATA_TEXT_FILE;
    if (!tok)
        return fl_input_error("%s: a %s dataset needs the model's tokenizer (tokenizer.json etc. in the model folder)",
                              path, text ? "plain-text" : "JSONL");
    if (text) return fl_data_load_text(ds, path, tok, opt, f);
    if (opt->format == FL_DATA_AUTO && named_txt(path))
        fprintf(opt->log ? opt->log : stderr, "%s: read as JSONL: its first line is a JSON object (--format text-file "
                "reads it as plain text)\n", path);
    fl_data_options o = *opt; /* messages records: one compiled template for the whole file */
    fl_chat_template *own = NULL;
    if (!opt->chat_template) fl_data_chat_template(tok, NULL, &own);
    if (own) o.chat_template = own;
    int status = json_array ? load_json_array(ds, path, tok, &o) : load_jsonl(ds, path, tok, &o);
    fl_chat_template_free(own);
    return status;
}

/* A folder or a glob: its files one after another (data_files.c says which, in which order). */
int fl_dataset_load(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt) {
    if (!fl_data_is_many(path)) return load_file(ds, path, tok, opt, NULL);
    char **paths;
    size_t n;
    FL_TRY(fl_data_paths(path, &paths, &n));
    int status = 0;
    for (size_t i = 0; i < n && !status; i++) status = load_file(ds, paths[i], tok, opt, path);
    fl_data_paths_free(paths, n);
    return status;
}
