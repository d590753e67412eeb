/* chat_fixture.h — reading tests/fixtures/chat/ (written by tools/make_chat_template_fixtures.py):
 * index.json (templates with their special tokens, conversations, the pinned time), the
 * templates/NAME.jinja files and cases.jsonl (one rendered case per line). Shared by the tests of the
 * engine (test_chat_templates.c) and of the trainer's chat data (test_train_data_chat.c).
 */
#ifndef FL_TEST_CHAT_FIXTURE_H
#define FL_TEST_CHAT_FIXTURE_H

#include <jansson.h>

#include "tokenizer/chat_template.h"

#define CHAT_FIXTURE_DIR "tests/fixtures/chat"

/* index.json parsed, or NULL (a test failure recorded). */
json_t *chat_fixture_index(void);
/* The template `name` of the index compiled with its special tokens, or NULL. */
fl_chat_template *chat_fixture_template(json_t *index, const char *name);
/* Every line of cases.jsonl as a JSON array of case objects, or NULL. */
json_t *chat_fixture_cases(void);
/* The conversation of a case ({"messages", "tools"?, "chat_template_kwargs"?, "add_generation_prompt"}). */
json_t *chat_fixture_conversation(json_t *index, json_t *c);

/* stories260K of ../shared converted into DIR/s260 (an HF folder whose tokenizer has no chat
 * template), its path in model; 0 on success (a test failure recorded otherwise). */
int chat_fixture_stories260k(const char *dir, char *model, size_t cap);

#endif
