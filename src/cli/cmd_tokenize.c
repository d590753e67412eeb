/* cmd_tokenize.c — `fastlora tokenize`: text in, ids out (and back), with a model's own tokenizer.
 * For users checking what the trainer will see, for scripts (the JSONL batch mode loads the
 * tokenizer once for many strings) and for debugging the tokenizer against HF.
 *
 *   fastlora tokenize --model DIR --text "Hello world"        ids, one line, space separated
 *   fastlora tokenize --model DIR --file notes.txt            same for a file's bytes
 *   fastlora tokenize --model DIR --decode 9707 1879          text of ids
 *   fastlora tokenize --model DIR --chat conv.json            rendered chat as JSON: text, ids, spans
 *   fastlora tokenize --model DIR --jsonl in.jsonl            one JSON line out per JSON line in
 * Options: --no-special (no BOS/post-processor), --split-special (special tokens in the text are
 * plain text), --chat-format chatml|zephyr|llama3 (a built-in format instead of the folder's
 * template), --chat-template FILE (a Jinja template instead of the folder's), --date SECONDS
 * (strftime_now's time, for reproducible renders of templates that print today's date),
 * --generation-prompt (append the assistant header after the chat), --bench N (with --file: encode
 * the file N times, print the best time as MB/s and tokens/s instead of the ids; see
 * tools/bench_tokenizer.py), --paragraphs (with --bench: encode each "\n\n"-separated paragraph
 * as its own call, as a data loader would).
 * conv.json is a list of messages or {"messages": [...], "add_generation_prompt": bool, "tools": [...],
 * "documents": [...], "chat_template_kwargs": {...}}; messages are what the template reads
 * (content strings or parts, tool_calls, reasoning_content, ...).
 * Not here: dataset tokenization for training (the trainer's data loader does that).
 */
#include "cli/commands.h"

#include "common/args.h"
#include "common/error.h"
#include "io/file_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
    "usage: fastlora tokenize --model DIR (--text STR | --file F | --decode ID... | --chat FILE.json | --jsonl IN)\n"
    "       [--no-special] [--split-special] [--chat-format chatml|zephyr|llama3 | --chat-template FILE]\n"
    "       [--generation-prompt] [--date SECONDS]\n"
    "       [--bench N [--paragraphs]]\n"
    "\n"
    "  --jsonl IN   batch mode: reads JSON lines from the file IN (`-`: standard input) and writes one\n"
    "               JSON line per input line, in order (blank lines are skipped):\n"
    "                 {\"text\": str}                     -> {\"ids\": [...]}\n"
    "                 {\"ids\": [...], \"skip_special_tokens\": bool}  -> {\"text\": str}   (decode)\n"
    "                 {\"messages\": [{\"role\", \"content\", ...}, ...], \"add_generation_prompt\": bool,\n"
    "                  \"tools\": [...], \"documents\": [...], \"chat_template_kwargs\": {...}}   (all but messages optional)\n"
    "                   -> {\"text\": str, \"ids\": [...], \"assistant_bytes\": [[s, e], ...], \"assistant_tokens\": [...],\n"
    "                       \"assistant_masks\": [0|1, ...]}   (transformers' return_assistant_tokens_mask: from\n"
    "                       {% generation %} blocks, all 0 without them)\n"
    "               --no-special, --split-special, --chat-format/--chat-template apply to every line. A bad line gives\n"
    "               {\"error\": \"line N: ...\"}, the others go on; the exit status is then 2.\n";

static int fail(int rc) {
    fprintf(stderr, "fastlora tokenize: %s\n", fl_last_error());
    return rc;
}

static int read_file(const char *path, char **out, size_t *len) {
    return fl_file_read_all(path, FL_FILE_TEXT, out, len);
}

static json_t *ids_json(const int32_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* How conversations are rendered: the template is made once, on the first conversation. */
typedef struct {
    fl_chat_format format;      // --chat-format, or FL_CHAT_AUTO (the folder's template)
    const char *template_text;  // --chat-template FILE's text, or NULL
    size_t template_len;
    int64_t now;                // --date, or 0 (the clock)
    fl_chat_template *ct;
} chat_opts;

static int chat_template_of(fl_tokenizer *tok, chat_opts *o, fl_chat_template **ct) {
    if (!o->ct) {
        if (o->template_text) FL_TRY(fl_chat_template_for(&o->ct, tok, o->template_text, o->template_len));
        else FL_TRY(fl_chat_template_builtin(&o->ct, tok, o->format));
    }
    *ct = o->ct;
    return 0;
}

/* Renders one conversation (messages + optional tools, documents, chat_template_kwargs; contents
 * may hold U+0000) into a JSON object {text, ids, assistant_bytes, assistant_tokens,
 * assistant_masks}. Errors name
 * the field, not the file. */
static int render_chat(fl_tokenizer *tok, json_t *conv, json_t *msgs, chat_opts *o, int gen, json_t **out) {
    *out = NULL;
    if (!json_is_array(msgs)) return fl_input_error("messages: expected a list");
    json_t *tools = json_object_get(conv, "tools"), *docs = json_object_get(conv, "documents");
    json_t *kwargs = json_object_get(conv, "chat_template_kwargs");
    if (tools && !json_is_array(tools) && !json_is_null(tools)) return fl_input_error("tools: expected a list");
    if (docs && !json_is_array(docs) && !json_is_null(docs)) return fl_input_error("documents: expected a list");
    if (kwargs && !json_is_object(kwargs)) return fl_input_error("chat_template_kwargs: expected an object");
    fl_chat_template *ct;
    FL_TRY(chat_template_of(tok, o, &ct));
    fl_chat_input in = {.messages = msgs, .tools = json_is_null(tools) ? NULL : tools, .documents = json_is_null(docs) ? NULL : docs,
                        .kwargs = kwargs, .add_generation_prompt = gen, .now = o->now};
    fl_chat_rendered r;
    FL_TRY(fl_chat_encode(tok, ct, &in, &r));
    json_t *obj = json_object(), *sb = json_array(), *st = json_array();
    json_object_set_new(obj, "text", json_stringn(r.text, r.len));
    json_object_set_new(obj, "ids", ids_json(r.ids.ids, r.ids.n));
    for (size_t i = 0; i < r.n_spans; i++) {
        json_array_append_new(sb, json_pack("[II]", (json_int_t)r.assistant_bytes[i].start, (json_int_t)r.assistant_bytes[i].end));
        json_array_append_new(st, json_pack("[II]", (json_int_t)r.assistant_tokens[i].start, (json_int_t)r.assistant_tokens[i].end));
    }
    json_object_set_new(obj, "assistant_bytes", sb);
    json_object_set_new(obj, "assistant_tokens", st);
    /* transformers' assistant_masks come from {% generation %} blocks only (all 0 without them); the
     * turn-by-turn spans we train on otherwise are in assistant_bytes / assistant_tokens */
    json_t *mask = json_array();
    int gen_blocks = fl_chat_template_has_generation(ct);
    for (size_t i = 0; i < r.ids.n; i++) json_array_append_new(mask, json_integer(gen_blocks ? r.assistant_mask[i] : 0));
    json_object_set_new(obj, "assistant_masks", mask);
    fl_chat_rendered_free(&r);
    *out = obj;
    return 0;
}

static void print_json_line(json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    puts(s);
    free(s);
}

static int run_chat(fl_tokenizer *tok, const char *path, chat_opts *o, int gen) {
    json_t *root;
    FL_TRY(fl_file_load_json(path, FL_FILE_CONFIG, JSON_ALLOW_NUL, &root));
    json_t *msgs = json_is_array(root) ? root : json_object_get(root, "messages");
    if (json_is_object(root) && json_is_true(json_object_get(root, "add_generation_prompt"))) gen = 1;
    json_t *out;
    int rc = render_chat(tok, json_is_object(root) ? root : NULL, msgs, o, gen, &out);
    json_decref(root);
    if (rc) {
        char msg[1024]; // the message names the field; say which file
        snprintf(msg, sizeof msg, "%s", fl_last_error());
        return fl_fail(rc, "%s: %s", path, msg);
    }
    print_json_line(out);
    json_decref(out);
    return 0;
}

/* ---- --jsonl: many strings through one loaded tokenizer ------------------------------------- */

/* One input object to one output object (or an error status). */
static int jsonl_row(fl_tokenizer *tok, json_t *row, int flags, chat_opts *o, int gen, json_t **out) {
    *out = NULL;
    if (!json_is_object(row)) return fl_input_error("expected an object with text, ids or messages");
    json_t *text = json_object_get(row, "text"), *ids = json_object_get(row, "ids"), *msgs = json_object_get(row, "messages");
    if ((text != NULL) + (ids != NULL) + (msgs != NULL) != 1)
        return fl_input_error("expected exactly one of the fields text, ids, messages");
    if (msgs) {
        json_t *g = json_object_get(row, "add_generation_prompt");
        if (g && !json_is_boolean(g)) return fl_input_error("add_generation_prompt: expected true/false");
        return render_chat(tok, row, msgs, o, gen || json_is_true(g), out);
    }
    if (text) {
        if (!json_is_string(text)) return fl_input_error("text: expected a string");
        fl_token_ids r = {0};
        int rc = fl_tokenizer_encode(tok, json_string_value(text), json_string_length(text), flags, &r);
        if (!rc) *out = json_pack("{so}", "ids", ids_json(r.ids, r.n));
        fl_token_ids_free(&r);
        return rc;
    }
    json_t *skip = json_object_get(row, "skip_special_tokens");
    if (!json_is_array(ids)) return fl_input_error("ids: expected a list of token ids");
    if (skip && !json_is_boolean(skip)) return fl_input_error("skip_special_tokens: expected true/false");
    size_t n = json_array_size(ids);
    int32_t *v = fl_malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(ids, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
            free(v);
            return fl_input_error("ids[%zu]: expected a token id (integer >= 0)", i);
        }
        v[i] = (int32_t)json_integer_value(x);
    }
    char *s = NULL;
    size_t len;
    int rc = fl_tokenizer_decode(tok, v, n, json_is_true(skip), &s, &len);
    free(v);
    if (!rc) *out = json_pack("{so}", "text", json_stringn(s, len));
    free(s);
    return rc;
}

static int run_jsonl(fl_tokenizer *tok, const char *path, int flags, chat_opts *o, int gen) {
    int from_stdin = !strcmp(path, "-");
    const char *name = from_stdin ? "standard input" : path;
    FILE *f = stdin;
    if (!from_stdin) FL_TRY(fl_file_fopen_read(path, FL_FILE_TEXT, &f));
    char *line = NULL, first_error[512] = "";
    size_t cap = 0, line_no = 0, n_rows = 0, n_bad = 0, len, max_line = (size_t)64 << 20;
    int got, too_long = 0;
    while ((got = fl_read_line(f, &line, &cap, &len, max_line)) != 0) {
        line_no++;
        if (got < 0) { too_long = 1; break; }   /* stdin without newlines would never end */
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
        if (!len) continue;
        n_rows++;
        json_error_t err;
        json_t *row = json_loadb(line, len, JSON_ALLOW_NUL, &err), *out = NULL;
        int rc = row ? jsonl_row(tok, row, flags, o, gen, &out)
                     : fl_input_error("column %d: malformed JSON: %s", err.column, err.text);
        json_decref(row);
        if (rc) {
            json_t *msg = json_sprintf("line %zu: %s", line_no, fl_last_error()); // NULL if not UTF-8
            if (!msg) msg = json_sprintf("line %zu: bad input", line_no);
            if (!n_bad++) snprintf(first_error, sizeof first_error, "%s", json_string_value(msg));
            out = json_pack("{so}", "error", msg);
        }
        print_json_line(out);
        json_decref(out);
    }
    int read_failed = ferror(f), e = errno;
    free(line);
    if (!from_stdin) fclose(f);
    if (read_failed) return fl_input_error("cannot read %s: %s", name, strerror(e));
    if (too_long) return fl_input_error("%s: line %zu is longer than %zu MiB (one JSON object a line)", name, line_no,
                                        max_line >> 20);
    if (n_bad) return fl_input_error("%s: %zu of %zu lines failed (first: %s)", name, n_bad, n_rows, first_error);
    return 0;
}

/* ---- main ----------------------------------------------------------------------------------- */

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *chat = NULL, *chat_format = NULL, *jsonl = NULL;
    const char *chat_template = NULL;
    int64_t date = 0;
    int flags = FL_ENCODE_ADD_SPECIAL, decode_from = -1, gen = 0, bench = 0, paragraphs = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_text, stdout); return 0; }
        else if (!strcmp(a, "--model") && has_value) model = argv[++i];
        else if (!strcmp(a, "--text") && has_value) text = argv[++i];
        else if (!strcmp(a, "--file") && has_value) file = argv[++i];
        else if (!strcmp(a, "--chat") && has_value) chat = argv[++i];
        else if (!strcmp(a, "--jsonl") && has_value) jsonl = argv[++i];
        else if (!strcmp(a, "--chat-format") && has_value) chat_format = argv[++i];
        else if (!strcmp(a, "--chat-template") && has_value) chat_template = argv[++i];
        else if (!strcmp(a, "--date") && has_value) {
            if (fl_parse_int64(argv[++i], 1, INT64_MAX / 2, &date)) {
                fprintf(stderr, "fastlora tokenize: --date: '%s' is not seconds since 1970 (strftime_now's time)\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(a, "--no-special")) flags &= ~FL_ENCODE_ADD_SPECIAL;
        else if (!strcmp(a, "--split-special")) flags |= FL_ENCODE_SPLIT_SPECIAL;
        else if (!strcmp(a, "--generation-prompt")) gen = 1;
        else if (!strcmp(a, "--bench") && has_value) {
            const fl_option opt = {"bench", FL_OPT_INT, &bench, "", FL_RANGE(1, 1000000)};
            if (fl_option_set(&opt, argv[++i])) { fprintf(stderr, "fastlora tokenize: %s\n", fl_last_error()); return 2; }
        }
        else if (!strcmp(a, "--paragraphs")) paragraphs = 1;
        else if (!strcmp(a, "--decode")) { decode_from = i + 1; break; }
        else {
            fprintf(stderr, "fastlora tokenize: %s: unknown option or missing value\n%s", a, usage_text);
            return 2;
        }
    }
    int modes = (text != NULL) + (file != NULL) + (chat != NULL) + (jsonl != NULL) + (decode_from >= 0);
    if (!model || modes != 1) {
        fprintf(stderr, "fastlora tokenize: need --model and exactly one of --text, --file, --decode, --chat, --jsonl\n%s",
                usage_text);
        return 2;
    }
    fl_chat_format format = FL_CHAT_AUTO;
    if (chat_format) {
        if (!strcmp(chat_format, "chatml")) format = FL_CHAT_CHATML;
        else if (!strcmp(chat_format, "zephyr")) format = FL_CHAT_ZEPHYR;
        else if (!strcmp(chat_format, "llama3")) format = FL_CHAT_LLAMA3;
        else {
            fprintf(stderr, "fastlora tokenize: --chat-format: '%s' is not chatml, zephyr or llama3\n", chat_format);
            return 2;
        }
    }
    if (chat_format && chat_template) {
        fprintf(stderr, "fastlora tokenize: --chat-format and --chat-template: give one\n");
        return 2;
    }
    chat_opts co = {.format = format, .now = date};
    char *template_text = NULL;
    if (chat_template) {
        int trc = fl_file_read_all(chat_template, FL_FILE_TOKENIZER, &template_text, &co.template_len);
        if (trc) return fail(trc);
        co.template_text = template_text;
    }
    fl_tokenizer *tok;
    int rc = fl_tokenizer_load(&tok, model);
    if (rc) { free(template_text); return fail(rc); }
    if (decode_from >= 0) {
        int n = argc - decode_from;
        int32_t *ids = fl_malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
        for (int i = 0; i < n && !rc; i++) {
            int64_t v = 0;
            if (fl_parse_int64(argv[decode_from + i], 0, INT32_MAX, &v))
                rc = fl_input_error("--decode: '%s' is not a token id", argv[decode_from + i]);
            ids[i] = (int32_t)v;
        }
        char *out = NULL;
        size_t len;
        if (!rc) rc = fl_tokenizer_decode(tok, ids, (size_t)n, 0, &out, &len);
        if (!rc) { fwrite(out, 1, len, stdout); fputc('\n', stdout); }
        free(out);
        free(ids);
    } else if (chat) {
        rc = run_chat(tok, chat, &co, gen);
    } else if (jsonl) {
        rc = run_jsonl(tok, jsonl, flags, &co, gen);
    } else {
        char *buf = NULL;
        size_t len = text ? strlen(text) : 0;
        if (file) rc = read_file(file, &buf, &len);
        fl_token_ids ids = {0};
        if (!rc && bench > 0) {
            double best = 1e30;
            for (int r = 0; r < bench && !rc; r++) {
                struct timespec t0, t1;
                const char *src = file ? buf : text;
                ids.n = 0;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                if (!paragraphs) rc = fl_tokenizer_encode(tok, src, len, flags, &ids);
                for (size_t at = 0; paragraphs && at < len && !rc;) { // pieces end before each "\n\n"
                    const char *sep = memmem(src + at, len - at, "\n\n", 2);
                    size_t end = sep ? (size_t)(sep - src) : len;
                    rc = fl_tokenizer_encode(tok, src + at, end - at, flags, &ids);
                    at = sep ? end + 2 : len;
                }
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
                if (s < best) best = s;
            }
            if (!rc) printf("bytes %zu tokens %zu seconds %.6f MB/s %.2f tok/s %.0f\n", len, ids.n, best,
                            (double)len / best / 1e6, (double)ids.n / best);
        } else if (!rc) {
            rc = fl_tokenizer_encode(tok, file ? buf : text, len, flags, &ids);
            for (size_t i = 0; !rc && i < ids.n; i++) printf(i ? " %d" : "%d", ids.ids[i]);
            if (!rc) putchar('\n');
        }
        if (rc == FL_ERR_INPUT && file) { /* the tokenizer says "text: ..."; the user gave a file */
            char why[512];
            const char *e = fl_last_error();
            snprintf(why, sizeof why, "%s", strncmp(e, "text: ", 6) ? e : e + 6);
            rc = fl_input_error("%s: %s", file, why);
        }
        fl_token_ids_free(&ids);
        free(buf);
    }
    fl_chat_template_free(co.ct);
    free(template_text);
    fl_tokenizer_free(tok);
    return rc ? fail(rc) : 0;
}
