/* cmd_generate.c — `fastlora generate`: see what a fine-tune learned.
 *
 *   fastlora generate --model DIR [--adapter DIR] --prompt "Once upon a time"
 *   fastlora generate --model DIR --adapter run1 --chat            a conversation on stdin (one line per turn)
 *   fastlora generate --model DIR --prompt-ids "1 415 2"  --ids    ids in, ids out (models without a tokenizer)
 *   fastlora generate --model DIR --prompt-ids "1 415 2" --logits F   the logits of every prompt position, (T, V)
 *                                                                      little-endian f32, to file F; no sampling
 * --chat renders the conversation with the model's chat template (any template: the Jinja engine,
 * infer/chat_session.h) or --chat-template FILE, with the generation prompt.
 * Sampling: --temperature (0 = greedy), --top-p, --seed, --max-tokens; stops at EOS (and the chat
 * template's end-of-turn token). KV-cached (infer/decoder.c). Not a server, no batching.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/error.h"
#include "engine/model.h"
#include "infer/chat_session.h"
#include "infer/generate.h"
#include "io/file_util.h"
#include "lora/adapter_io.h"
#include "tokenizer/tokenizer.h"

static const char usage_text[] =
    "usage: fastlora generate --model DIR [--adapter DIR] (--prompt TEXT | --prompt-ids \"ID ...\" | --chat) [options]";

typedef struct {
    fl_tokenizer *tok;
    int32_t *ids;
    int n, cap, n_prompt;     /* ids = prompt then generated: decoding the whole keeps the spaces right */
    size_t printed;
    int print_ids;
} stream_ctx;

/* Starts a reply after `n` prompt ids: what they decode to counts as printed. */
static void stream_start(stream_ctx *c, const int32_t *ids, int n) {
    c->n = 0;
    c->printed = 0;
    if (c->cap < n + 1) { c->cap = n + 256; c->ids = realloc(c->ids, sizeof(int32_t) * (size_t)c->cap); }
    memcpy(c->ids, ids, sizeof(int32_t) * (size_t)n);
    c->n = c->n_prompt = n;
    char *text;
    size_t len;
    if (c->tok && !c->print_ids && fl_tokenizer_decode(c->tok, ids, (size_t)n, 1, &text, &len) == 0) {
        c->printed = len;
        free(text);
    }
}

/* Prints the text of the tokens so far beyond what was printed (whole UTF-8 characters only). */
static void on_token(int32_t id, void *ctx_) {
    stream_ctx *c = ctx_;
    if (c->print_ids || !c->tok) { printf("%s%d", c->n > c->n_prompt ? " " : "", id); fflush(stdout); }
    if (c->n == c->cap) { c->cap = c->cap ? 2 * c->cap : 256; c->ids = realloc(c->ids, sizeof(int32_t) * (size_t)c->cap); }
    c->ids[c->n++] = id;
    if (c->print_ids || !c->tok) return;
    char *text;
    size_t len;
    if (fl_tokenizer_decode(c->tok, c->ids, (size_t)c->n, 1, &text, &len)) return;
    /* hold back a trailing replacement character: it may be half of a multi-byte character */
    size_t upto = len;
    if (upto >= 3 && !memcmp(text + upto - 3, "\xEF\xBF\xBD", 3)) upto -= 3;
    if (upto > c->printed) { fwrite(text + c->printed, 1, upto - c->printed, stdout); c->printed = upto; fflush(stdout); }
    free(text);
}

static int parse_ids(const char *s, int32_t **out, int *n) {
    *n = 0;
    *out = fl_malloc(sizeof(int32_t) * (strlen(s) / 2 + 2));
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff) { free(*out); *out = NULL; return fl_input_error("--prompt-ids: '%s' is not a list of ids", s); }
        (*out)[(*n)++] = (int32_t)v;
        p = end;
    }
    if (!*n) { free(*out); *out = NULL; return fl_input_error("--prompt-ids: no ids"); }
    return 0;
}

/* --chat: one user turn per stdin line; the whole conversation is rendered again each turn with the
 * chat template and the generation prompt (simple and exact); a reply stops at EOS or the
 * template's end-of-turn token. */
static int chat_loop(fl_tokenizer *tok, fl_model *m, fl_decoder *dec, fl_gen_options *go, stream_ctx *sc,
                     const char *template_path, const char *system_msg, int max_tokens, int with_adapter) {
    fl_chat_session s;
    FL_TRY(fl_chat_session_init(&s, tok, template_path, system_msg));
    int32_t eos = go->n_stop ? go->stop_ids[0] : -1;
    if (s.end_of_turn >= 0 && s.end_of_turn != eos && go->n_stop < 8) go->stop_ids[go->n_stop++] = s.end_of_turn;
    int rc = fl_decoder_init(dec, m, m->cfg.max_position_embeddings > 0 ? m->cfg.max_position_embeddings : 4096, with_adapter);
    int32_t *out = fl_malloc(sizeof(int32_t) * (size_t)max_tokens);
    char *line = NULL;
    size_t cap = 0, len, max_turn = (size_t)4 << 20;
    int got;
    for (int turn = 0; !rc && turn < 1024 && (fputs("> ", stderr), (got = fl_read_line(stdin, &line, &cap, &len, max_turn)) != 0); turn++) {
        if (got < 0) { rc = fl_input_error("stdin: a turn longer than %zu MiB (one line per turn)", max_turn >> 20); break; }
        while (len && line[len - 1] == '\r') line[--len] = 0;
        if (!len) continue;
        fl_token_ids ids = {0};
        rc = fl_chat_session_prompt(&s, line, len, &ids);
        if (!rc && (int)ids.n + max_tokens > dec->capacity) rc = fl_input_error("the conversation is longer than the model's context");
        int n_out = 0, stopped;
        if (!rc) stream_start(sc, ids.ids, (int)ids.n);
        fl_decoder_reset(dec);
        if (!rc) rc = fl_generate(dec, ids.ids, (int)ids.n, go, out, &n_out, &stopped);
        fl_token_ids_free(&ids);
        putchar('\n');
        char *reply = NULL;
        size_t rl;
        if (!rc && fl_tokenizer_decode(tok, out, (size_t)n_out, 1, &reply, &rl) == 0) fl_chat_session_reply(&s, reply, rl);
        free(reply);
    }
    free(line);
    free(out);
    fl_chat_session_free(&s);
    return rc;
}

int cmd_generate(int argc, char **argv) {
    const char *model = NULL, *adapter = NULL, *prompt = NULL, *prompt_ids = NULL, *device = "cpu", *system_msg = NULL, *dtype = NULL;
    const char *logits_path = NULL, *quant_s = NULL, *template_path = NULL;
    int chat = 0, max_tokens = 128, print_ids = 0, no_special = 0;
    uint64_t seed = 0;
    float temperature = 0.8f, top_p = 0.95f;
    fl_option opts[] = {
        {"model", FL_OPT_STRING, &model, "HF model folder", FL_NO_RANGE},
        {"adapter", FL_OPT_STRING, &adapter, "PEFT adapter folder (e.g. a fastlora train --out folder)", FL_NO_RANGE},
        {"prompt", FL_OPT_STRING, &prompt, "text to continue", FL_NO_RANGE},
        {"prompt-ids", FL_OPT_STRING, &prompt_ids, "token ids to continue (\"1 2 3\")", FL_NO_RANGE},
        {"chat", FL_OPT_FLAG, &chat, "a conversation: one user turn per stdin line, with the chat template", FL_NO_RANGE},
        {"system", FL_OPT_STRING, &system_msg, "system message for --chat", FL_NO_RANGE},
        {"chat-template", FL_OPT_STRING, &template_path, "--chat: a Jinja chat template file instead of the model folder's", FL_NO_RANGE},
        {"max-tokens", FL_OPT_INT, &max_tokens, "tokens to generate at most (default 128)", FL_RANGE(1, 1 << 20)},
        {"temperature", FL_OPT_FLOAT, &temperature, "0 = greedy (default 0.8)", FL_AT_LEAST(0)},
        {"top-p", FL_OPT_FLOAT, &top_p, "nucleus sampling mass (default 0.95)", FL_MIN_OPEN | FL_MAX, 0, 1},
        {"seed", FL_OPT_U64, &seed, "sampling seed (default 0)", FL_NO_RANGE},
        {"ids", FL_OPT_FLAG, &print_ids, "print token ids instead of text", FL_NO_RANGE},
        {"no-special", FL_OPT_FLAG, &no_special, "do not add BOS (the tokenizer's post-processor) to --prompt", FL_NO_RANGE},
        {"device", FL_OPT_STRING, &device, "cpu, cuda or auto (default cpu)", FL_NO_RANGE},
        {"dtype", FL_OPT_STRING, &dtype, "weight dtype: bf16 or f32 (default: the faster on this CPU, said when it runs)", FL_NO_RANGE},
        {"logits", FL_OPT_STRING, &logits_path, "write the prompt's logits, (T, V) f32, to this file instead of sampling",
         FL_NO_RANGE},
        {"quant", FL_OPT_STRING, &quant_s, "nf4: the frozen projections in 4-bit NormalFloat, as trained with --quant nf4", FL_NO_RANGE},
    };
    int rc = fl_args_parse("generate", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), usage_text);
    if (rc) return rc < 0 ? 0 : rc;
    if (!model) { fprintf(stderr, "fastlora generate: --model: required\n"); return 2; }
    if ((prompt != NULL) + (prompt_ids != NULL) + chat != 1) {
        fprintf(stderr, "fastlora generate: give exactly one of --prompt, --prompt-ids, --chat\n");
        return 2;
    }
    if (logits_path && fl_output_file_check(logits_path)) {   /* before the model is loaded and run */
        fprintf(stderr, "fastlora generate: --logits: %s\n", fl_last_error());
        return 2;
    }
    const fl_backend *be;
    fl_tokenizer *tok = NULL;
    fl_model m;
    int have_model = 0;
    fl_decoder dec = {0};
    int32_t *ids = NULL, *out = NULL;
    int n_ids = 0;
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 1;
    lc.target_mask = 1u << FL_PROJ_O; /* unused without an adapter (B = 0 and the decoder skips LoRA); o_proj is
                                         never part of a fused module (Phi-3 refuses a lone q) */
    fl_quant quant = FL_QUANT_NONE;
    rc = fl_backend_select_dtype(device, dtype, &be);
    if (!rc) rc = fl_quant_parse(quant_s, &quant);
    if (!rc && adapter) rc = fl_adapter_load_config(adapter, &lc);
    if (!rc && (prompt || chat) && fl_tokenizer_load(&tok, model)) rc = FL_ERR_INPUT;
    if (!rc) { rc = fl_model_init_dir_quant(&m, model, be, &lc, quant); have_model = !rc; }
    if (!rc && adapter) rc = fl_model_load_adapter(&m, adapter);
    int32_t eos = tok && fl_tokenizer_eos_id(tok) >= 0 ? fl_tokenizer_eos_id(tok) : (have_model ? m.cfg.eos_token_id : -1);
    fl_gen_options go = {.max_new = max_tokens, .sampler = {.temperature = temperature, .top_p = top_p, .seed = seed}};
    if (eos >= 0) go.stop_ids[go.n_stop++] = eos;
    stream_ctx sc = {.tok = tok, .print_ids = print_ids};
    go.on_token = on_token;
    go.ctx = &sc;
    if (!rc && prompt_ids) rc = parse_ids(prompt_ids, &ids, &n_ids);
    if (!rc && prompt) {
        fl_token_ids t = {0};
        rc = fl_tokenizer_encode(tok, prompt, strlen(prompt), no_special ? 0 : FL_ENCODE_ADD_SPECIAL, &t);
        ids = t.ids;
        n_ids = (int)t.n;
        if (!rc && !n_ids) rc = fl_input_error("--prompt: encodes to no tokens");
    }
    if (!rc && logits_path) {
        if (chat) rc = fl_input_error("--logits: give --prompt or --prompt-ids, not --chat");
        if (!rc) rc = fl_model_check_length(&m, n_ids, "--logits (the prompt)");
        for (int i = 0; i < n_ids && !rc; i++)
            if (ids[i] >= m.cfg.vocab_size) rc = fl_input_error("--prompt-ids: id %d is outside the vocabulary (%d)", ids[i], m.cfg.vocab_size);
        float *logits = rc ? NULL : fl_malloc(sizeof(float) * (size_t)n_ids * (size_t)m.cfg.vocab_size);
        if (!rc) fl_model_logits(&m, ids, 1, n_ids, logits);
        if (!rc) rc = fl_write_file_atomic(logits_path, logits, sizeof(float) * (size_t)n_ids * (size_t)m.cfg.vocab_size);
        free(logits);
    } else if (!rc && !chat) {
        int capacity = n_ids + max_tokens;
        rc = fl_decoder_init(&dec, &m, capacity, adapter != NULL);
        out = fl_malloc(sizeof(int32_t) * (size_t)max_tokens);
        int n_out, stopped;
        if (!rc && tok && !print_ids) { fputs(prompt, stdout); fflush(stdout); }
        stream_start(&sc, ids, n_ids);
        if (!rc) rc = fl_generate(&dec, ids, n_ids, &go, out, &n_out, &stopped);
        if (!rc) putchar('\n');
    } else if (!rc && chat) {
        rc = chat_loop(tok, &m, &dec, &go, &sc, template_path, system_msg, max_tokens, adapter != NULL);
    }
    if (rc) fprintf(stderr, "fastlora generate: %s\n", fl_last_error());
    fl_decoder_free(&dec);
    free(sc.ids);
    free(ids);
    free(out);
    if (have_model) fl_model_free(&m);
    fl_tokenizer_free(tok);
    return rc;
}
