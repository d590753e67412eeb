#!/usr/bin/env python3
"""Writes tests/fixtures/chat/: real chat templates rendered by transformers' apply_chat_template
machinery over many conversations, for tests/test_chat_templates.c (byte-identical text, identical
{% generation %} spans, the same refusals).

Sources of the templates (each written verbatim to tests/fixtures/chat/templates/NAME.jinja):
  - llama.cpp's models/templates/ folder, copies of the chat templates of the public model repos
    named in each file name (e.g. meta-llama-Llama-3.1-8B-Instruct.jinja is
    huggingface.co/meta-llama/Llama-3.1-8B-Instruct's tokenizer_config.json chat_template), as
    vendored in the PyPI sdist llama-cpp-python 0.3.36 (vendor/llama.cpp/models/templates/):
        pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all:
  - TRL 1.16.0's trl/chat_templates/ (PyPI wheel `trl`): model templates and the *_training
    variants that wrap assistant turns in {% generation %} (what TRL's assistant_only_loss uses):
        pip download trl==1.16.0 --no-deps
  - ../shared/models/*: tokenizer_config.json chat_template / chat_template.jinja of the model
    folders here (Qwen2.5-0.5B-Instruct, SmolLM2-135M-Instruct, TinyLlama-1.1B-Chat-v1.0).

Rendering is transformers' own (render_jinja_template after _normalize_chat_messages, with the
special tokens as apply_chat_template passes them), with strftime_now pinned to NOW (a fixed
timestamp; the C test passes the same one). Generation spans are converted from characters to
UTF-8 bytes. A conversation a template refuses (raise_exception or any jinja/Python error) is
recorded as {"error": ...}; the C engine must refuse it too.

usage: tools/make_chat_template_fixtures.py LLAMA_CPP_TEMPLATES_DIR TRL_CHAT_TEMPLATES_DIR
"""
import datetime as dt
import json
import os
import sys

import transformers
import transformers.utils.chat_template_utils as ctu

OUT = "tests/fixtures/chat"
SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models")
NOW = 1785067200  # 2026-07-26 12:00 UTC

LLAMA_CPP = [  # (file, special tokens)
    ("meta-llama-Llama-3.1-8B-Instruct", "llama3"), ("meta-llama-Llama-3.2-3B-Instruct", "llama3"),
    ("meta-llama-Llama-3.3-70B-Instruct", "llama3"), ("Qwen-Qwen2.5-7B-Instruct", "qwen"), ("Qwen-Qwen3-0.6B", "qwen"),
    ("Qwen-QwQ-32B", "qwen"), ("Qwen3-Coder", "qwen"), ("Qwen3.5-4B", "qwen"), ("google-gemma-2-2b-it", "gemma"),
    ("google-gemma-4-31B-it", "gemma"), ("mistralai-Mistral-Nemo-Instruct-2407", "mistral"),
    ("Mistral-Small-3.2-24B-Instruct-2506", "mistral"),
    ("mistralai-Ministral-3-14B-Reasoning-2512", "mistral"), ("microsoft-Phi-3.5-mini-instruct", "phi"),
    ("HuggingFaceTB-SmolLM3-3B", "chatml"), ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "deepseek"),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek"), ("deepseek-ai-DeepSeek-V3.1", "deepseek"),
    ("ibm-granite-granite-3.3-2B-Instruct", "granite"), ("ibm-granite-granite-4.0", "granite"),
    ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "llama3"), ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "llama3"),
    ("CohereForAI-c4ai-command-r-plus-tool_use", "cohere"),
    ("meetkai-functionary-medium-v3.1", "llama3"), ("meetkai-functionary-medium-v3.2", "llama3"),
    ("fireworks-ai-llama-3-firefunction-v2", "llama3"), ("moonshotai-Kimi-K2", "chatml"), ("GLM-4.6", "chatml"),
    ("MiniMax-M2", "chatml"), ("openai-gpt-oss-120b", "chatml"), ("NVIDIA-Nemotron-Nano-v2", "chatml"),
    ("Apertus-8B-Instruct", "chatml"), ("LFM2-8B-A1B", "chatml"), ("MiMo-VL", "chatml"), ("ByteDance-Seed-OSS", "chatml"),
]
TRL = [
    ("gemma3", "gemma"), ("phi3", "phi"), ("llama3_2", "llama3"), ("qwen3_training", "qwen"), ("llama3_training", "llama3"),
    ("gemma_training", "gemma"), ("gemma3_training", "gemma"), ("phi3_5_training", "phi"), ("qwen2_5_training", "qwen"),
    ("deepseek_r1_distill_training", "deepseek"), ("cohere_training", "cohere"), ("qwen3_5_think_training", "qwen"),
]
SHARED_MODELS = ["Qwen2.5-0.5B-Instruct", "SmolLM2-135M-Instruct", "TinyLlama-1.1B-Chat-v1.0"]

SPECIAL = {
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "qwen": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "gemma": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"},
    "mistral": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "phi": {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>"},
    "chatml": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"},
    "deepseek": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "granite": {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"},
    "cohere": {"bos_token": "<BOS_TOKEN>", "eos_token": "<|END_OF_TURN_TOKEN|>", "pad_token": "<PAD>"},
}

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"},
                                                           "unit": {"type": "string", "enum": ["c", "f"]}},
                          "required": ["city"]}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}}}

CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": True},
    {"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"},
                  {"role": "assistant", "content": "4"}], "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello, how can I help?"},
                  {"role": "user", "content": "Tell me a joke."}, {"role": "assistant", "content": "Why did the chicken cross the road?"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Good morning"},
                  {"role": "assistant", "content": "Bonjour"}, {"role": "user", "content": "And good night?"}],
     "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "日本語で答えて 🙂 — café, naïve, עברית"},
                  {"role": "assistant", "content": "はい、わかりました。\n\t✓ «ok»"}], "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "  \n spaced \n  "},
                  {"role": "user", "content": "   "}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "What's the weather in Zürich?"},
                  {"role": "assistant", "content": "", "tool_calls": [CALL]},
                  {"role": "tool", "content": "{\"temp\": 21}", "tool_call_id": "call_1", "name": "get_weather"},
                  {"role": "assistant", "content": "It is 21 °C."}], "tools": [WEATHER], "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "Parts: one"}, {"type": "text", "text": " and two"}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "Two parts."}]}], "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "Think first: 3*7?"},
                  {"role": "assistant", "content": "21", "reasoning_content": "3*7 = 21.", "tool_calls": None}],
     "add_generation_prompt": False, "chat_template_kwargs": {"enable_thinking": True}},
    {"messages": [{"role": "user", "content": "No thinking please"}], "add_generation_prompt": True,
     "chat_template_kwargs": {"enable_thinking": False}},
    {"messages": [{"role": "assistant", "content": "I speak first."}, {"role": "user", "content": "ok"}],
     "add_generation_prompt": True},
]


# Engine cases: one feature each (numbers and str() of values, tojson, loop variables, loop
# controls, namespace, slicing, string methods, filters, tests, macros, call/filter/set blocks,
# whitespace control, string escapes, raw, unpacking, strftime_now), rendered by transformers'
# environment, for tests/test_jinja.c.
ENGINE_CASES = [
 ("{{ 1.0 }}|{{ 1e20 }}|{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ 3/2 }}|{{ 7//2 }}|{{ -7 % 3 }}|{{ 2**10 }}|{{ 'ab'*3 }}", {}),
 ("{{ [1, 'a', none, true, 1.5] }}|{{ {'k': 'v', 'n': [1, 2]} }}|{{ (1,) }}|{{ ('a', \"b'c\") }}", {}),
 ("{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ 'é\"\\n' | tojson }}|{{ x | tojson(sort_keys=true) }}", {"x": {"b": [1, 2.5, None, True], "a": "ü"}}),
 ("{% for i in [3, 4, 5] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}", {}),
 ("{% for i in range(10) if i is odd %}{% if i > 6 %}{% break %}{% endif %}{% if i == 3 %}{% continue %}{% endif %}{{ i }}{% else %}none{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor %}", {}),
 ("{% set ns = namespace(n=0, s='') %}{% for m in msgs %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }}{{ ns.s }}", {"msgs": [{"role": "user"}, {"role": "assistant"}]}),
 ("{{ 'Hello World'[::-1] }}|{{ [1,2,3,4][1:3] }}|{{ 'héllo'[1:] }}|{{ [1,2,3][-1] }}|{{ 'abc'[5:] }}", {}),
 ("{{ '  a b  ' | trim }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a.b.c'.rsplit('.', 1) }}", {}),
 ("{{ 'hello world' | title }}|{{ 'hello WORLD'.title() }}|{{ 'hELLO' | capitalize }}|{{ 'Abc' | upper }}{{ 'ÀÉ' | lower }}", {}),
 ("{{ x | default('d') }}|{{ none | default('d') }}|{{ '' | default('d', true) }}|{{ x is defined }}|{{ y is none }}|{{ y.z is defined }}", {"y": {}}),
 ("{{ [3,1,2] | sort }}|{{ {'b':1,'a':2} | dictsort }}|{{ [1,2,2,3] | unique | list }}|{{ ['a','b'] | join('-') }}|{{ [{'n':1},{'n':2}] | map(attribute='n') | list }}|{{ [1,2,3] | length }}|{{ 'héllo' | length }}", {}),
 ("{{ items | selectattr('t', 'equalto', 'x') | list }}|{{ items | rejectattr('t', 'equalto', 'x') | map(attribute='v') | join(',') }}|{{ items | selectattr('v') | list | length }}", {"items": [{"t": "x", "v": 1}, {"t": "y", "v": 2}, {"t": "x", "v": 0}]}),
 ("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}", {}),
 ("{% macro f(a, b='B') %}[{{ a }}{{ b }}{{ varargs }}{{ kwargs }}]{% endmacro %}{{ f(1) }}{{ f(1, 2, 3) }}{{ f(a=5, c=6) }}", {}),
 ("{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}inner{% endcall %}|{% filter upper %}up{% endfilter %}|{% set b %}block{% endset %}{{ b }}", {}),
 ("{{ '{} and {}'.format(1, 'a') }}|{{ '%s-%d' % ('x', 3) }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('bc') }}|{{ 'a-b'.replace('-', '+') }}|{{ d.get('k', 'no') }}|{{ d.items() | list }}", {"d": {"a": 1}}),
 ("{{ 1 if x else 2 }}|{{ 'yes' if none }}|{{ 1 < 2 < 3 }}|{{ 'b' in 'abc' }}|{{ 3 not in [1,2] }}|{{ not true or false and true }}|{{ 'a' ~ 1 ~ none }}", {}),
 ("  {%- if true %}  x  {% endif -%}  \n  {% if true %}\n    y\n  {% endif %}\n{# c #}\nz{%+ if true %} +{% endif %}\n", {}),
 ("{{ \"a\\\nb\" }}|{{ 'tab\\there' }}|{{ '\\u00e9\\x41' }}|{% raw %}{{ not }}{% endraw %}", {}),
 ("{% set a, b = [1, 2] %}{{ a }}{{ b }}|{% for k, v in {'x': 1, 'y': 2}.items() %}{{ k }}={{ v }},{% endfor %}|{{ range(3) | list }}|{{ range(5, 0, -2) | list }}|{{ dict(a=1) }}", {}),
 ("{{ messages[0]['content'] | string | lower }}{% for m in messages %}{{ m.get('name', '?') }}{% endfor %}{{ 3 | string }}{{ '5' | int + 1 }}{{ '2.5' | float }}{{ true | int }}", {"messages": [{"content": "HI"}]}),
 ("{{ strftime_now('%Y-%m-%d %B %a') }}", {}),
]


class PinnedDatetime(dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return dt.datetime.fromtimestamp(NOW, tz)


def read_template(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def shared_template(model):
    d = os.path.join(SHARED, model)
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))
    special = {}
    for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        v = cfg.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            special[k] = v
    if os.path.exists(os.path.join(d, "chat_template.jinja")):
        return read_template(os.path.join(d, "chat_template.jinja")), special
    return cfg["chat_template"], special


def char_to_byte(text, i):
    return len(text[:i].encode("utf-8"))


def render(template, conv, special):
    messages = ctu._normalize_chat_messages(json.loads(json.dumps(conv["messages"])))
    kwargs = {**special, **conv.get("chat_template_kwargs", {})}
    has_gen = "generation" in template and ctu.re.search(r"\{\%-?\s*generation\s*-?\%\}", template)
    try:
        texts, indices = ctu.render_jinja_template(
            conversations=[messages], tools=conv.get("tools"), documents=None, chat_template=template,
            return_assistant_tokens_mask=bool(has_gen), add_generation_prompt=conv["add_generation_prompt"], **kwargs)
    except Exception as e:  # noqa: BLE001 - every refusal is part of the spec
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    text = texts[0]
    row = {"text": text}
    if has_gen:
        row["generation"] = [[char_to_byte(text, s), char_to_byte(text, e)] for s, e in indices[0]]
    return row


def main():
    llama_dir, trl_dir = sys.argv[1], sys.argv[2]
    ctu.datetime = PinnedDatetime
    templates = []  # (name, text, special, source)
    for name, fam in LLAMA_CPP:
        templates.append((name, read_template(os.path.join(llama_dir, name + ".jinja")), SPECIAL[fam],
                          f"llama-cpp-python 0.3.36 sdist: vendor/llama.cpp/models/templates/{name}.jinja"))
    for name, fam in TRL:
        templates.append(("trl-" + name, read_template(os.path.join(trl_dir, name + ".jinja")), SPECIAL[fam],
                          f"trl 1.16.0 wheel: trl/chat_templates/{name}.jinja"))
    for model in SHARED_MODELS:
        text, special = shared_template(model)
        templates.append(("shared-" + model, text, special, f"../shared/models/{model}"))
    os.makedirs(os.path.join(OUT, "templates"), exist_ok=True)
    index, n_rows, n_err = [], 0, 0
    with open(os.path.join(OUT, "cases.jsonl"), "w", encoding="utf-8") as f:
        for name, text, special, source in templates:
            with open(os.path.join(OUT, "templates", name + ".jinja"), "w", encoding="utf-8", newline="") as t:
                t.write(text)
            index.append({"name": name, "source": source, "special": special})
            for i, conv in enumerate(CONVERSATIONS):
                row = {"template": name, "conversation": i, **render(text, conv, special)}
                n_err += "error" in row
                n_rows += 1
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    meta = {"transformers": transformers.__version__, "jinja2": __import__("jinja2").__version__, "now": NOW,
            "templates": index, "conversations": CONVERSATIONS}
    with open(os.path.join(OUT, "index.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=1)
    engine = []
    for t, v in ENGINE_CASES:
        try:
            want = ctu._compile_jinja_template(t).render(**v)
        except Exception as e:  # noqa: BLE001
            want = None
        engine.append({"template": t, "vars": v, "text": want})
    with open(os.path.join(OUT, "engine_cases.json"), "w", encoding="utf-8") as f:
        json.dump(engine, f, ensure_ascii=False, indent=0)
    print(f"{len(templates)} templates x {len(CONVERSATIONS)} conversations = {n_rows} cases ({n_err} refused)")


if __name__ == "__main__":
    main()
