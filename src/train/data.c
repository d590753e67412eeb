/* data.c — JSONL and binary-token datasets to documents (ids + loss mask); see data.h. */
#include "train/data.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "io/file_util.h"

static const char *const format_names[] = {"auto", "text", "prompt", "messages", "alpaca", "tokens"};

int fl_data_format_parse(const char *name, fl_data_format *out) {
    for (int i = 0; i < 6; i++)
        if (!strcmp(name, format_names[i])) { *out = (fl_data_format)i; return 0; }
    return fl_input_error("--format: '%s' is not known (expected auto, text, prompt, messages, alpaca or tokens)", name);
}

const char *fl_data_format_name(fl_data_format f) { return (unsigned)f < 6 ? format_names[f] : "?"; }

fl_data_options fl_data_options_default(void) {
    fl_data_options o = {.format = FL_DATA_AUTO, .strict = 0, .max_line_bytes = (size_t)64 << 20, .eos_id = -1,
                         .vocab_size = 0, .max_reported = 10, .log = NULL};
    return o;
}

/* ---- documents ------------------------------------------------------------------------------ */

static void dataset_push(fl_dataset *ds, fl_doc doc) {
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
    dataset_push(ds, d);
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

static int encode_messages(fl_tokenizer *tok, json_t *list, fl_doc *doc) {
    if (!json_is_array(list) || json_array_size(list) == 0)
        return fl_input_error("field 'messages': expected a non-empty list of {\"role\", \"content\"}");
    size_t n = json_array_size(list);
    fl_chat_message *msgs = fl_calloc(n, sizeof *msgs);
    int status = 0, n_assistant = 0;
    for (size_t i = 0; i < n && !status; i++) {
        json_t *m = json_array_get(list, i);
        json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        if (!json_is_object(m)) status = fl_input_error("field 'messages[%zu]': expected an object", i);
        else if (!json_is_string(role)) status = fl_input_error("field 'messages[%zu].role': expected a string", i);
        else if (!json_is_string(content)) status = fl_input_error("field 'messages[%zu].content': expected a string", i);
        else if (strcmp(json_string_value(role), "system") && strcmp(json_string_value(role), "user") &&
                 strcmp(json_string_value(role), "assistant"))
            status = fl_input_error("field 'messages[%zu].role': '%s' (expected system, user or assistant)", i,
                                    json_string_value(role));
        else if (strlen(json_string_value(content)) != json_string_length(content))
            status = fl_input_error("field 'messages[%zu].content': contains a NUL character", i);
        if (status) break;
        msgs[i].role = json_string_value(role);
        msgs[i].content = json_string_value(content);
        n_assistant += !strcmp(msgs[i].role, "assistant");
    }
    if (!status && !n_assistant) status = fl_input_error("field 'messages': no assistant message (nothing to learn)");
    fl_chat_rendered r = {0};
    if (!status) status = fl_tokenizer_chat_render(tok, FL_CHAT_AUTO, msgs, n, 0, &r);
    if (!status) {
        doc->n = (int)r.ids.n;
        doc->ids = fl_malloc(sizeof(int32_t) * (r.ids.n + 1));
        doc->mask = fl_calloc(r.ids.n + 1, 1);
        memcpy(doc->ids, r.ids.ids, sizeof(int32_t) * r.ids.n);
        for (size_t s = 0; s < r.n_spans; s++)
            for (size_t t = r.assistant_tokens[s].start; t < r.assistant_tokens[s].end && t < r.ids.n; t++) doc->mask[t] = 1;
    }
    fl_chat_rendered_free(&r);
    free(msgs);
    return status;
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
    if (!json_is_object(root)) {
        status = fl_input_error("expected a JSON object");
    } else if (f == FL_DATA_AUTO) {
        if (json_object_get(root, "messages")) f = FL_DATA_MESSAGES;
        else if (json_object_get(root, "prompt") || json_object_get(root, "completion")) f = FL_DATA_PROMPT;
        else if (json_object_get(root, "instruction") || json_object_get(root, "output")) f = FL_DATA_ALPACA;
        else if (json_object_get(root, "text")) f = FL_DATA_TEXT;
        else status = fl_input_error("no known field: expected 'text', 'prompt'+'completion', 'messages' or "
                                     "'instruction'+'output'");
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
        status = encode_messages(tok, json_object_get(root, "messages"), doc);
        break;
    default:
        status = fl_input_error("format '%s' is not a JSONL shape", fl_data_format_name(f));
    }
    if (!status) {
        int targets = 0;
        for (int i = 1; i < doc->n; i++) targets += doc->mask[i];
        for (int i = 0; i < doc->n && !status; i++)
            if (doc->ids[i] < 0 || (opt->vocab_size > 0 && doc->ids[i] >= opt->vocab_size))
                status = fl_input_error("token id %d is outside the model's vocabulary (%d)", doc->ids[i], opt->vocab_size);
        if (!status && (doc->n < 2 || targets == 0)) status = fl_input_error("no target tokens (nothing to learn)");
    }
    if (status) { free(doc->ids); free(doc->mask); memset(doc, 0, sizeof *doc); }
    return status;
}

/* ---- JSONL files ------------------------------------------------------------------------------ */

/* Reads one line (without '\n') into *buf; lines over max bytes are consumed and flagged. Returns 0 at
 * EOF with nothing read. Byte by byte, so NUL bytes inside a line cannot confuse it. */
static int read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max, int *too_long) {
    *len = 0;
    *too_long = 0;
    int c, any = 0;
    while ((c = getc_unlocked(f)) != EOF) {
        any = 1;
        if (c == '\n') break;
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

static int load_jsonl(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt) {
    FILE *f = fopen(path, "rb");
    if (!f) return fl_input_error("%s: cannot open: %s", path, strerror(errno));
    FILE *log = opt->log ? opt->log : stderr;
    char *buf = NULL;
    size_t cap = 0, len = 0, lineno = 0, bad_here = 0;
    int too_long, status = 0;
    while (!status && read_line(f, &buf, &cap, &len, opt->max_line_bytes, &too_long)) {
        lineno++;
        size_t k = 0;
        while (!too_long && k < len && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\r')) k++;
        if (!too_long && k == len) continue; /* blank line */
        ds->n_lines++;
        fl_doc doc;
        int rc = too_long ? fl_input_error("line longer than %zu bytes", opt->max_line_bytes)
                          : fl_data_parse_line(buf, len, tok, opt, &doc);
        if (!rc) { dataset_push(ds, doc); continue; }
        if (opt->strict) {
            char why[768];
            snprintf(why, sizeof why, "%s", fl_last_error()); /* fl_input_error rewrites that buffer */
            status = fl_input_error("%s:%zu: %s (--strict: stopping at the first bad line)", path, lineno, why);
            break;
        }
        ds->n_bad++;
        if ((int)bad_here++ < opt->max_reported) fprintf(log, "%s:%zu: skipped: %s\n", path, lineno, fl_last_error());
    }
    if (!status && ferror(f)) status = fl_input_error("%s: read error", path);
    if (!status && bad_here > (size_t)opt->max_reported)
        fprintf(log, "%s: %zu more bad lines skipped (%zu in all)\n", path, bad_here - (size_t)opt->max_reported, bad_here);
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
    FILE *log = opt->log ? opt->log : stderr;
    size_t index, bad_here = 0;
    json_t *item;
    int status = 0;
    json_array_foreach(root, index, item) {
        ds->n_lines++;
        fl_doc doc;
        if (!parse_record(item, tok, opt, &doc)) { dataset_push(ds, doc); continue; }
        if (opt->strict) {
            char why[768];
            snprintf(why, sizeof why, "%s", fl_last_error());
            status = fl_input_error("%s:[%zu]: %s (--strict: stopping at the first bad record)", path, index, why);
            break;
        }
        ds->n_bad++;
        if ((int)bad_here++ < opt->max_reported) fprintf(log, "%s:[%zu]: skipped: %s\n", path, index, fl_last_error());
    }
    if (!status && bad_here > (size_t)opt->max_reported)
        fprintf(log, "%s: %zu more bad records skipped (%zu in all)\n", path, bad_here - (size_t)opt->max_reported, bad_here);
    json_decref(root);
    return status;
}

static int starts_with_bracket(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int c;
    while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r') {}
    fclose(f);
    return c == '[';
}

/* ---- binary tokens ---------------------------------------------------------------------------- */

static int load_tokens(fl_dataset *ds, const char *path, const fl_data_options *opt) {
    FILE *f = fopen(path, "rb");
    if (!f) return fl_input_error("%s: cannot open: %s", path, strerror(errno));
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

static int has_tokens_magic(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[8] = {0};
    int yes = f && fread(magic, 1, 8, f) == 8 && !memcmp(magic, FL_TOKENS_MAGIC, 8);
    if (f) fclose(f);
    return yes;
}

int fl_data_is_tokens_file(const char *path, const char *format) {
    fl_data_format f = FL_DATA_AUTO;
    if (fl_data_format_parse(format, &f)) return 0;
    return f == FL_DATA_TOKENS || (f == FL_DATA_AUTO && has_tokens_magic(path));
}

int fl_dataset_load(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt) {
    FL_TRY(fl_file_check_read(path, FL_FILE_DATASET));   /* no FIFO, device or directory; the size limit */
    if (opt->format == FL_DATA_TOKENS || (opt->format == FL_DATA_AUTO && has_tokens_magic(path)))
        return load_tokens(ds, path, opt);
    if (!tok) return fl_input_error("%s: a JSONL dataset needs the model's tokenizer (tokenizer.json etc. in the model folder)", path);
    return starts_with_bracket(path) ? load_json_array(ds, path, tok, opt) : load_jsonl(ds, path, tok, opt);
}
