/* cmd_tokenize.c — `fastlora tokenize`: text in, ids out (and back), with a model's own tokenizer.
 * For users checking what the trainer will see and for debugging the tokenizer against HF.
 *
 *   fastlora tokenize --model DIR --text "Hello world"        ids, one line, space separated
 *   fastlora tokenize --model DIR --file notes.txt            same for a file's bytes
 *   fastlora tokenize --model DIR --decode 9707 1879          text of ids
 *   fastlora tokenize --model DIR --chat conv.json            rendered chat as JSON: text, ids, spans
 * Options: --no-special (no BOS/post-processor), --split-special (special tokens in the text are
 * plain text), --chat-format chatml|zephyr|llama3 (instead of the folder's template),
 * --generation-prompt (append the assistant header after the chat), --bench N (with --file: encode
 * the file N times, print the best time as MB/s and tokens/s instead of the ids; see
 * tools/bench_tokenizer.py), --paragraphs (with --bench: encode each "\n\n"-separated paragraph
 * as its own call, as a data loader would).
 * conv.json is a list of {"role", "content"} or {"messages": [...], "add_generation_prompt": bool}.
 * Not here: batch/dataset tokenization (the trainer's data loader does that).
 */
#include "cli/commands.h"

#include "common/error.h"
#include "io/file_util.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
    "usage: fastlora tokenize --model DIR (--text STR | --file F | --decode ID... | --chat FILE.json)\n"
    "       [--no-special] [--split-special] [--chat-format chatml|zephyr|llama3] [--generation-prompt]\n"
    "       [--bench N [--paragraphs]]\n";

static int fail(int rc) {
    fprintf(stderr, "fastlora tokenize: %s\n", fl_last_error());
    return rc;
}

static int read_file(const char *path, char **out, size_t *len) {
    return fl_file_read_all(path, FL_FILE_TEXT, out, len);
}

static int run_chat(fl_tokenizer *tok, const char *path, fl_chat_format format, int gen) {
    json_t *root;
    FL_TRY(fl_file_load_json(path, FL_FILE_CONFIG, 0, &root));
    json_t *msgs = json_is_array(root) ? root : json_object_get(root, "messages");
    if (json_is_object(root) && json_is_true(json_object_get(root, "add_generation_prompt"))) gen = 1;
    if (!json_is_array(msgs)) { json_decref(root); return fl_input_error("%s: messages: expected a list", path); }
    size_t n = json_array_size(msgs);
    fl_chat_message *m = fl_calloc(n ? n : 1, sizeof *m);
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(msgs, i);
        m[i].role = json_string_value(json_object_get(it, "role"));
        m[i].content = json_string_value(json_object_get(it, "content"));
        if (!m[i].role || !m[i].content) {
            free(m);
            json_decref(root);
            return fl_input_error("%s: messages[%zu]: expected {\"role\": str, \"content\": str}", path, i);
        }
    }
    fl_chat_rendered r;
    int rc = fl_tokenizer_chat_render(tok, format, m, n, gen, &r);
    free(m);
    json_decref(root);
    if (rc) return rc;
    json_t *out = json_object();
    json_object_set_new(out, "text", json_stringn(r.text, r.len));
    json_t *ids = json_array(), *sb = json_array(), *st = json_array();
    for (size_t i = 0; i < r.ids.n; i++) json_array_append_new(ids, json_integer(r.ids.ids[i]));
    for (size_t i = 0; i < r.n_spans; i++) {
        json_array_append_new(sb, json_pack("[II]", (json_int_t)r.assistant_bytes[i].start, (json_int_t)r.assistant_bytes[i].end));
        json_array_append_new(st, json_pack("[II]", (json_int_t)r.assistant_tokens[i].start, (json_int_t)r.assistant_tokens[i].end));
    }
    json_object_set_new(out, "ids", ids);
    json_object_set_new(out, "assistant_bytes", sb);
    json_object_set_new(out, "assistant_tokens", st);
    char *s = json_dumps(out, JSON_COMPACT | JSON_ENSURE_ASCII);
    puts(s);
    free(s);
    json_decref(out);
    fl_chat_rendered_free(&r);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *chat = NULL, *chat_format = NULL;
    int flags = FL_ENCODE_ADD_SPECIAL, decode_from = -1, gen = 0, bench = 0, paragraphs = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_text, stdout); return 0; }
        else if (!strcmp(a, "--model") && has_value) model = argv[++i];
        else if (!strcmp(a, "--text") && has_value) text = argv[++i];
        else if (!strcmp(a, "--file") && has_value) file = argv[++i];
        else if (!strcmp(a, "--chat") && has_value) chat = argv[++i];
        else if (!strcmp(a, "--chat-format") && has_value) chat_format = argv[++i];
        else if (!strcmp(a, "--no-special")) flags &= ~FL_ENCODE_ADD_SPECIAL;
        else if (!strcmp(a, "--split-special")) flags |= FL_ENCODE_SPLIT_SPECIAL;
        else if (!strcmp(a, "--generation-prompt")) gen = 1;
        else if (!strcmp(a, "--bench") && has_value) bench = atoi(argv[++i]);
        else if (!strcmp(a, "--paragraphs")) paragraphs = 1;
        else if (!strcmp(a, "--decode")) { decode_from = i + 1; break; }
        else {
            fprintf(stderr, "fastlora tokenize: %s: unknown option or missing value\n%s", a, usage_text);
            return 2;
        }
    }
    int modes = (text != NULL) + (file != NULL) + (chat != NULL) + (decode_from >= 0);
    if (!model || modes != 1) {
        fprintf(stderr, "fastlora tokenize: need --model and exactly one of --text, --file, --decode, --chat\n%s", usage_text);
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
    fl_tokenizer *tok;
    int rc = fl_tokenizer_load(&tok, model);
    if (rc) return fail(rc);
    if (decode_from >= 0) {
        int n = argc - decode_from;
        int32_t *ids = fl_malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
        for (int i = 0; i < n && !rc; i++) {
            char *end;
            long v = strtol(argv[decode_from + i], &end, 10);
            if (*end || end == argv[decode_from + i] || v < 0 || v > INT32_MAX)
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
        rc = run_chat(tok, chat, format, gen);
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
        fl_token_ids_free(&ids);
        free(buf);
    }
    fl_tokenizer_free(tok);
    return rc ? fail(rc) : 0;
}
