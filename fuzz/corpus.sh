#!/usr/bin/env bash
# corpus.sh — assembles the seed corpora of the fuzz harnesses into BUILD/seeds/<target>/ (an
# ignored folder, rebuilt on every run): the committed seeds of fuzz/seeds/<target>/ (small
# hand-made files and every finding's input), the project's fixtures and data files, files of
# ../shared (models, data) cut to seed size, and the valid files some harnesses write themselves
# (FZ_SEEDS_OUT). Multi-file inputs are joined with the harnesses' separator "\n@@@@\n" (fuzz.h).
# Bash and coreutils only (CI runs it on a clean machine). Usage: fuzz/corpus.sh BUILD [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: fuzz/corpus.sh BUILD [TARGET...]}
shift
SHARED=${FASTLORA_SHARED:-../shared}
[ -d "$SHARED" ] || SHARED=""
SEP=$'\n@@@@\n'

out=""        # the target's seed folder
n_seed=0
# seed NAME PART... — one seed file, its parts joined by the separator (a part is a file's bytes
# when it names a readable file, else the string itself).
seed() {
    local name=$1 first=1 part
    shift
    n_seed=$((n_seed + 1))
    {
        for part in "$@"; do
            [ $first -eq 1 ] || printf '%s' "$SEP"
            first=0
            if [ -n "$part" ] && [ -f "$part" ]; then cat -- "$part"; else printf '%s' "$part"; fi
        done
    } > "$out/$name"
}
# prefixed NAME BYTE FILE — a seed of one option byte (two hex digits) then FILE's bytes.
prefixed() {
    n_seed=$((n_seed + 1))
    { printf "\\x$2"; cat -- "$3"; } > "$out/$1"
}
# le32 N... — little-endian int32s on stdout.
le32() {
    local v
    for v in "$@"; do
        v=$(( v & 0xFFFFFFFF ))
        printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8 & 255)))\\x$(printf %02x $((v >> 16 & 255)))\\x$(printf %02x $((v >> 24 & 255)))"
    done
}
# le64 N — a little-endian uint64.
le64() { le32 $(( $1 & 0xFFFFFFFF )) $(( $1 >> 32 )); }
# st_file JSON NBYTES — a safetensors file: header JSON then NBYTES zero bytes of data.
st_file() { le64 ${#1}; printf '%s' "$1"; head -c "$2" /dev/zero; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls fuzz/fuzz_*.c | sed 's|^fuzz/fuzz_||; s|\.c$||'))

for t in "${targets[@]}"; do
    out="$BUILD/seeds/$t"
    rm -rf "$out"
    mkdir -p "$out"
    n_seed=0
    if [ -d "fuzz/seeds/$t" ]; then cp fuzz/seeds/"$t"/* "$out"/ 2>/dev/null || true; fi
    case $t in
    safetensors)
        for f in tests/fixtures/hf/*/adapter/adapter_model.safetensors tests/fixtures/hf/*/expected.safetensors; do
            cp "$f" "$out/fixture-$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")"
        done
        st_file '{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1,2],"data_offsets":[4,12]}}' 12 > "$out/two"
        st_file '{"e":{"dtype":"I64","shape":[0,3],"data_offsets":[0,0]},"u":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"i":{"dtype":"I32","shape":[],"data_offsets":[3,7]},"h":{"dtype":"F16","shape":[1,1,1,1,1,1,1,1],"data_offsets":[7,9]}}' 9 > "$out/dtypes"
        st_file '{}' 0 > "$out/empty"
        ;;
    config)
        for f in tests/fixtures/hf/*/model/config.json; do cp "$f" "$out/fixture-$(basename "$(dirname "$(dirname "$f")")")"; done
        if [ -n "$SHARED" ]; then for f in "$SHARED"/models/*/config.json; do cp "$f" "$out/shared-$(basename "$(dirname "$f")")"; done; fi
        ;;
    tokenizer_json)
        tok=tests/fixtures/train/tok
        seed tok "$tok/tokenizer.json" "$tok/tokenizer_config.json"
        seed tok-only "$tok/tokenizer.json"
        if [ -n "$SHARED" ]; then
            seed tok-zephyr "$tok/tokenizer.json" "$SHARED/models/TinyLlama-1.1B-Chat-v1.0/tokenizer_config.json" \
                "$SHARED/models/TinyLlama-1.1B-Chat-v1.0/chat_template.jinja"
        fi
        ;;
    tokenizer_bpe_files)
        ;;   # the committed seeds (tools/make_fuzz_seeds.py: Qwen2.5 and SmolLM2 files, cut)
    tokenizer_tiktoken)
        if [ -n "$SHARED" ]; then
            head -n 400 "$SHARED/models/Llama-3.2-1B/original/tokenizer.model" > "$tmp/tiktoken"
            seed llama3-head "$tmp/tiktoken" "$SHARED/models/Llama-3.2-1B/tokenizer_config.json"
        fi
        ;;
    tokenizer_encode)
        i=0
        for f in tests/fixtures/tokenizer/*.jsonl; do
            case $f in *.chat.jsonl) continue ;; esac
            while IFS= read -r line; do
                text=${line#\{\"text\":\"}
                text=${text%%\",\"ids\"*}
                printf "\\x$(printf %02x $(( (i % 5) | (i / 5 % 4) << 4 )))%s" "$text" > "$out/text-$i"
                i=$((i + 1))
            done < <(head -n 120 "$f")
        done
        if [ -n "$SHARED" ]; then
            head -c 2000 "$SHARED/data/tinyshakespeare/input.txt" > "$tmp/shakespeare"
            for m in 0 1 2 3 4; do prefixed "shakespeare-$m" 0$m "$tmp/shakespeare"; done
        fi
        for m in 0 1 2 3 4; do { printf "\\x$(printf %02x $((8 | m)))"; le32 0 1 2 3 100 259 260 261 -1 2147483647; } > "$out/decode-$m"; done
        ;;
    chat)
        i=0
        for f in tests/fixtures/tokenizer/*.chat.jsonl; do
            while IFS= read -r line; do
                printf "\\x$(printf %02x $(( (i % 5) | (i / 5 % 4) << 3 )))%s" "$line" > "$out/chat-$i"
                i=$((i + 1))
            done < "$f"
        done
        ;;
    train_data)
        cat > "$tmp/shapes.jsonl" <<'EOF'
{"text": "the cat sat on the mat"}
{"prompt": "Q: 2+2?\nA:", "completion": " 4"}
{"instruction": "Add the numbers.", "input": "2 and 2", "output": "4"}
{"instruction": "Say hi.", "output": "hi"}
{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}

   
{"text": ""}
{"text": 5}
[1, 2]
not json
{"messages": [{"role": "user", "content": "no answer"}]}
{"question": "why?", "answer": "because"}
EOF
        for b in 00 07 08 10 20 30 46 80 c0; do prefixed "shapes-$b" $b "$tmp/shapes.jsonl"; done
        printf '\x00prompt=question,completion=answer%s{"question": "why?", "answer": "because"}\n' "$SEP" > "$out/fields"
        printf '\x02prompt=q,completion=a,text=t%s{"q": "x", "a": "y"}\n{"t": "z"}\n' "$SEP" > "$out/fields-prompt"
        printf '\x03[{"text": "array row"}, {"prompt": "p", "completion": "c"}, 7]\n' > "$out/array"
        { printf '\x05FLTOKv1\0'; le64 2; le64 5; le64 2; le64 5; le32 1 2 3 4 5; } > "$out/tokens"
        { printf '\x00FLTOKv1\0'; le64 1; le64 3; le64 3; le32 0 1 2; } > "$out/tokens-auto"
        for f in tests/fixtures/tokenizer/*.chat.jsonl; do prefixed "chat-$(basename "$f" .chat.jsonl)" 03 "$f"; done
        if [ -n "$SHARED" ]; then
            head -n 3 "$SHARED/data/gsm8k/train.jsonl" > "$tmp/gsm8k"
            prefixed gsm8k-raw 00 "$tmp/gsm8k"
            { printf '\x02prompt=question,completion=answer%s' "$SEP"; cat "$tmp/gsm8k"; } > "$out/gsm8k-fields"
            { head -n 16 "$SHARED/data/alpaca-style-instructions-1100/instruction-data.json" | sed '$ s/},$/}/'; echo ']'; } > "$tmp/alpaca"
            prefixed alpaca-array 00 "$tmp/alpaca"
            prefixed alpaca-array-strict 0c "$tmp/alpaca"
        fi
        ;;
    preference)
        # one row per seed, the first byte picking tokenizer and max_length (fuzz_preference.c)
        i=0
        while IFS= read -r line; do
            printf "\\x$(printf %02x $(( (i % 5) | ((i * 7) % 32) << 3 )))%s" "$line" > "$out/row-$i"
            i=$((i + 1))
        done <<'EOF'
{"prompt": "The sky is", "chosen": " blue.", "rejected": " green."}
{"prompt": "Say hi", "chosen": "hi<|im_end|>", "rejected": "no"}
{"chosen": "Q: why? A: because", "rejected": "Q: why? A: no"}
{"chosen": "same start", "rejected": "same start and more"}
{"chosen": "x ", "rejected": "y "}
{"prompt": [{"role": "user", "content": "What color is the sky?"}], "chosen": [{"role": "assistant", "content": "Blue."}], "rejected": [{"role": "assistant", "content": "Green."}]}
{"chosen": [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": "Here."}], "rejected": [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": "There."}]}
{"prompt": [{"role": "user", "content": "w"}], "chosen": [{"role": "assistant", "content": "a"}], "rejected": [{"role": "assistant", "content": "b"}], "tools": "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]", "chat_template_kwargs": {"enable_thinking": false}}
{"prompt": "Grüße", "chosen": " 🙂", "rejected": " x"}
{"prompt": "a", "chosen": "b"}
EOF
        ;;
    gpu_catalog)
        cp data/gpus.csv "$out/gpus.csv"
        for f in tests/fixtures/plan/*.csv; do cp "$f" "$out/fixture-$(basename "$f")"; done
        seed cpu-override tests/fixtures/plan/cpu-catalog.csv tests/fixtures/plan/override.csv
        seed gpus-override data/gpus.csv tests/fixtures/plan/override.csv
        ;;
    bench_records)
        for f in tests/fixtures/board/*.jsonl tests/fixtures/plan/*.jsonl; do cp "$f" "$out/fixture-$(basename "$(dirname "$f")")-$(basename "$f")"; done
        ;;
    reference_board)
        cp data/reference-board.csv "$out/reference-board.csv"
        for f in tests/fixtures/board/*.csv; do cp "$f" "$out/fixture-$(basename "$f")"; done
        ;;
    adapter)
        for d in tests/fixtures/hf/*/; do
            seed "fixture-$(basename "$d")" "$d/adapter/adapter_config.json" "$d/adapter/adapter_model.safetensors" "$d/model/config.json"
        done
        seed config-only tests/fixtures/hf/llama_gqa/adapter/adapter_config.json
        ;;
    template)
        # every fixture template with two of the fixture's conversations (variables as transformers passes them)
        i=0
        for f in tests/fixtures/chat/templates/*.jinja; do
            i=$((i + 1))
            if [ $((i % 2)) -eq 0 ]; then
                vars='{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "and?"}], "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": null, "documents": null}'
            else
                vars='{"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4", "tool_calls": null}], "add_generation_prompt": false, "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}], "documents": null}'
            fi
            seed "fixture-$(basename "$f" .jinja)" "$f" "$vars"
        done
        ;;
    merge_export)
        # option byte (merge, export f32 / f16 / q8_0, --lora-only) + the fixture adapters
        for d in tests/fixtures/hf/*/; do
            [ -f "$d/adapter/adapter_config.json" ] || continue
            for opt in 00 01 05 0d 03; do
                { printf "\x$opt"; cat "$d/adapter/adapter_config.json"; } > "$tmp/cfg$opt"
                seed "fixture-$(basename "$d")-$opt" "$tmp/cfg$opt" "$d/adapter/adapter_model.safetensors"
            done
        done
        ;;
    llama2c)
        # dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab V (negative: untied), seq 4; zero weights
        for V in 8 -8; do
            Va=${V#-}
            n=$(( Va * 8 + 8 + 64 + 2 * 4 * 8 + 64 + 8 + 3 * 16 * 8 + 8 + 4 * 2 * 2 + (V < 0 ? Va * 8 : 0) ))
            { le32 8 16 1 2 1 "$V" 4; head -c $((n * 4)) /dev/zero; } > "$tmp/model$V"
        done
        { le32 16; for tok in '<unk>' $'\n<s>\n' $'\n</s>\n' '<0x41>' ' ' 'a' 'b' ' ab'; do le32 0 ${#tok}; printf '%s' "$tok"; done; } > "$tmp/tok8"
        seed tiny "$tmp/model8" "$tmp/tok8"
        seed tiny-untied "$tmp/model-8" "$tmp/tok8"
        seed tiny-no-tokenizer "$tmp/model8"
        if [ -n "$SHARED" ] && [ -f "$SHARED/data/stories260K/tok512.bin" ]; then
            n=$(( 512 * 8 + 8 + 64 + 2 * 4 * 8 + 64 + 8 + 3 * 16 * 8 + 8 + 4 * 2 * 2 ))
            { le32 8 16 1 2 1 512 4; head -c $((n * 4)) /dev/zero; } > "$tmp/model512"
            seed tok512 "$tmp/model512" "$SHARED/data/stories260K/tok512.bin"
        fi
        ;;
    yaml_config) # Axolotl's examples (tests/fixtures/axolotl, Apache-2.0: NOTICE.md there) and ours
        for f in tests/fixtures/axolotl/*.yml; do cp "$f" "$out/axolotl-$(basename "$f")"; done
        printf 'model: m\ndata: d.jsonl\nout: o\nseq: 128\ntargets: [q, v]\nrslora: true\nseed: 18446744073709551615\n' > "$out/ours"
        printf 'base_model: m\ndatasets:\n  - path: d/\n    type: chat_template\n    field_messages: conversations\n    message_property_mappings:\n      role: from\n      content: value\noutput_dir: o\nuse_tensorboard: true\n' > "$out/axolotl-chat"
        printf 'a: &x [1, 2]\nb: *x\n---\nc: 1\n' > "$out/anchors-two-docs"
        printf 'lr: [1\n' > "$out/bad-yaml"
        ;;
    train_options)
        printf '{"model": "m", "data": "d.jsonl", "out": "o", "seq": 128, "batch": 2, "lr": 0.001, "schedule": "linear", "targets": "q,v", "rslora": true, "fields": "prompt=question"}' > "$out/options"
        printf '{"grad_accum": 4, "warmup-ratio": 0.1, "epochs": 2.5, "adapter": null, "data": "x", "out": "y"}' > "$out/spellings"
        printf '{"lr": "fast"}' > "$out/bad-type"
        printf '{"unknown": 1}' > "$out/bad-key"
        ;;
    esac
    # harnesses that write their own valid inputs (files they build at start-up)
    if grep -q FZ_SEEDS_OUT "fuzz/fuzz_$t.c" && [ -x "$BUILD/fuzz_$t" ]; then
        FZ_SEEDS_OUT="$out" "$BUILD/fuzz_$t" -runs=0 >/dev/null 2>&1 || { echo "corpus.sh: $BUILD/fuzz_$t could not write its seeds" >&2; exit 1; }
    fi
    echo "$t: $(ls "$out" | wc -l) seeds"
done
