/* template.h — fastlora's Jinja engine: parse a Hugging Face chat template once, render it many
 * times, byte for byte as transformers' apply_chat_template does (jinja2 3.1 with transformers'
 * environment: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, the
 * `{% generation %}` tag, its own tojson/raise_exception/strftime_now/namespace/dict).
 *
 * What it is: the Jinja2 subset real chat templates use (docs/CHAT-TEMPLATES.md lists it), with
 * Python's semantics for the values the templates see (str(), repr(), json.dumps, str methods).
 * What it is not: a general Jinja2 (no include/extends/import, no autoescape, no sandbox escapes
 * to defend because nothing but the values below can be reached), thread-shared state (a parsed
 * template is read-only and may be rendered from several threads, each render has its own arena).
 *
 * Errors: one line through common/error.h. A template that does not parse names its line and
 * column and what was expected ("chat template: line 3 column 17: expected '%}', got 'endfor'");
 * raise_exception(msg) gives "chat template raised: MSG"; limits (output bytes, steps, recursion,
 * memory) give a line naming the limit. Rendering cannot hang or exhaust memory.
 *
 *     fl_tpl *t;
 *     if (fl_tpl_parse(text, len, &t)) { puts(fl_last_error()); ... }
 *     json_t *vars = json_pack("{s:o, s:b}", "messages", msgs, "add_generation_prompt", 1);
 *     fl_tpl_output out = {0};
 *     if (!fl_tpl_render(t, vars, NULL, &out)) fwrite(out.text, 1, out.len, stdout);
 *     fl_tpl_output_free(&out); json_decref(vars); fl_tpl_free(t);
 */
#ifndef FL_TEMPLATE_H
#define FL_TEMPLATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct fl_tpl fl_tpl;

/* Parses template source (UTF-8; CR and CRLF become LF first, as jinja2 does). */
int fl_tpl_parse(const char *src, size_t len, fl_tpl **out);
void fl_tpl_free(fl_tpl *t);
/* 1 when the template has a {% generation %} block (transformers' assistant-mask tag). */
int fl_tpl_has_generation(const fl_tpl *t);

typedef struct {
    int64_t now;          // strftime_now's time (seconds since the epoch, local time); 0: the clock
    size_t max_output;    // bytes of rendered text; 0: 64 MiB
    size_t max_memory;    // bytes of the render's arena; 0: 512 MiB
    uint64_t max_steps;   // statements + loop iterations + calls; 0: 50 million
} fl_tpl_limits;

typedef struct { size_t start, end; } fl_tpl_span; // half-open, bytes of text

typedef struct {
    char *text;            // NUL-terminated (the text may itself hold NUL bytes: use len)
    size_t len;
    fl_tpl_span *gen;      // (n_gen,) each {% generation %} block, in the order they finished (below)
    size_t n_gen;
} fl_tpl_output;

/* A {% generation %} span is what transformers' AssistantTracker records: it starts where the
 * top-level text ends when the block finishes, and spans as many characters (code points) as the
 * block rendered. For a block at the top level (every real template) that is exactly its text.
 * For one inside a captured body (a macro, a set/filter/call block, another generation block) the
 * span need not cover its text, spans may overlap, and one may reach past the end: starts never
 * decrease, start <= end <= len (an end past the text is cut at len, which marks the same tokens).
 * Consumers apply transformers' mask rule to the spans in this order (tokenizer/chat_template.c). */

/* Renders with the top-level variables of the JSON object `vars` (messages, tools,
 * add_generation_prompt, bos_token, ... as the caller passes them; the caller applies
 * transformers' input conventions, see tokenizer/chat.c). `limits` may be NULL. */
int fl_tpl_render(const fl_tpl *t, json_t *vars, const fl_tpl_limits *limits, fl_tpl_output *out);
void fl_tpl_output_free(fl_tpl_output *out);

#endif
