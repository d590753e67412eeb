#!/usr/bin/env python3
"""Writes tests/fixtures/pref_train/: short preference-training runs of TRL 1.16's trainers on a tiny
model, with the metrics they log at each optimizer step and the adapter they end with, for the C
test to run `fastlora train --objective dpo|ipo|orpo|simpo` on the same files and compare.

usage: tools/make_preference_train_fixtures.py   (from the repository root; CPU only, one thread,
       under a minute; running it twice gives identical files. Made with trl 1.16.0,
       transformers 5.24.0, peft 0.21.2, torch on the CPU.)

What it writes:
  model/            a tiny random LlamaForCausalLM (hidden 16, intermediate 32, 2 layers, 4 heads,
                    2 kv heads, head_dim 4, rms_norm_eps 1e-5, rope_theta 10000, 128 positions,
                    untied lm_head, initializer_range 0.5 so the logits are not flat, F32
                    model.safetensors) and a byte-level BPE tokenizer trained here on the fixture
                    texts (3 special tokens + 256 bytes + 41 merges = 300 ids; ByteLevel
                    pre-tokenizer without a prefix space, ByteLevel decoder, no post-processor, so
                    encoding plain text adds no BOS). Special tokens <|endoftext|> (id 0, bos and
                    pad), <|im_start|> (1), <|im_end|> (2, eos); a ChatML chat template with no
                    default system message (transformers 5 writes it to chat_template.jinja).
                    vocab_size = the tokenizer's length; bos/eos/pad_token_id in config.json.
  start/, ref/      PEFT LoRA adapters (r 4, lora_alpha 8, dropout 0, all seven Llama projections,
                    bias none; lora_A PEFT's kaiming init, lora_B random normal * 0.05, not zero, so
                    the gradient reaches lora_A). Every run starts from start/; ref/ is one run's
                    reference (--ref-adapter).
  standard.jsonl    10 {"prompt", "chosen", "rejected"} strings. Row 1's prompt ends in the token
                    " th" and its completions start with "e", which the tokenizer merges into " the"
                    across the split; row 3 (prompt 17 ids, prompt + chosen + EOS 51) is longer than
                    --seq 48 with its chosen completion, which is cut (keep_start); no prompt fills
                    --seq, so TRL drops no row.
  conversational.jsonl  10 rows of the same shape with message lists, 3 with a system message first.
  cases.json        a list of {"name", "objective", "data", "args", "pairs_kept", "steps",
                    "adapter"}: args are the fastlora train options that reproduce the run (all
                    but --model, --data, --out, --device, --dtype); pairs_kept the rows TRL kept
                    after tokenizing; steps one entry per optimizer step, {"step": n} plus every
                    value the trainer logged at that step (floats as Python reprs); adapter the
                    final adapter's path under tests/fixtures/pref_train/.
  out_<case>/       adapter_model.safetensors + adapter_config.json after the 3 steps (F32; only the
                    trained "default" adapter).

The runs: float32 on the CPU (bf16 False: TRL's configs default bf16 to True), attn_implementation
eager, one thread. Every case takes max_steps 3 at learning_rate 1e-2, lr_scheduler_type constant,
warmup_steps 0, weight_decay 0, optim adamw_torch (betas 0.9/0.999, eps 1e-8), max_grad_norm 1.0
(dpo_ref_none: 0, which HF Trainer reads as no clipping; it still logs the norm), logging_steps
1, seed 0, train_sampling_strategy "sequential" (the rows in file order), dataloader_drop_last
False, gradient_checkpointing False (TRL's default is True), disable_dropout True, max_length =
--seq 48. The policy is PeftModel.from_pretrained(base, start/, is_trainable=True).

  dpo, ipo: trl.DPOTrainer, loss_type sigmoid / ipo, precompute_ref_log_probs False (the default:
    the reference log-probs are computed at every step, under no_grad), padding_free False (1.16
    turns it off anyway). The reference:
    - ref_model None (dpo_standard, dpo_conv_accum): DPOTrainer 1.16 copies the policy's
      "default" adapter into a second, untrained adapter "ref" and computes the reference with it
      active, so the reference is the starting adapter, frozen (fastlora's default; no
      --ref-adapter);
    - ipo_ref_adapter: ref_model = the base with ref/ applied (the LoRA-injected LlamaForCausalLM
      of a PeftModel, unmerged, eval mode) -> --ref-adapter tests/fixtures/pref_train/ref;
    - dpo_ref_none: ref_model = a separate copy of the base, no adapter -> --ref-adapter none.
    Standard rows get EOS (<|im_end|>) appended to each completion as text; no BOS is added (the
    tokenizer has no post-processor and DPO adds none itself); prompt and prompt+completion are
    tokenized apart and the completion starts where their ids diverge (so row 1's " the" is a
    completion token and the prompt loses its " th"). Conversational rows are rendered with the
    chat template (the prompt with add_generation_prompt) and get no extra EOS. The collator
    (DataCollatorForPreference) cuts prompt+completion to max_length (keep_start) and pads on the
    right. The log-probs come from TRL's fused LM head (add_fused_lm_head; always on in 1.16).
    sigmoid: -logsigmoid(beta * (chosen - rejected log-ratio)), log-ratios of the SUMMED completion
    log-probs. ipo: (chosen/n_chosen - rejected/n_rejected - 1/(2 beta))^2 with each log-ratio
    divided by its number of completion tokens (after the cut).
    Logged: loss; grad_norm (before clipping); learning_rate; epoch; rewards/chosen,
    rewards/rejected = beta * the summed log-ratios (also for ipo), means over the pairs;
    rewards/margins = mean of chosen - rejected; rewards/accuracies = fraction with chosen >
    rejected; logps/chosen, logps/rejected = means of the policy's summed completion log-probs;
    logits/chosen, logits/rejected = mean over completion tokens of the mean logit over the
    vocabulary; entropy = mean predictive entropy over all completion tokens; mean_token_accuracy
    = fraction of chosen completion tokens that are the argmax; num_tokens = attention-mask tokens
    (chosen and rejected rows) seen so far, cumulative.
  orpo: trl.experimental.orpo.ORPOTrainer. simpo: trl.experimental.cpo.CPOTrainer, loss_type
    simpo, simpo_gamma 0.5, cpo_alpha 0 (simpo) or 1 (simpo_alpha, TRL's default), AlphaPO alpha
    0, label_smoothing 0. Both tokenize by the same tokenize_row: prompt and prompt+completion
    tokenized apart, the prompt's last id moved to the completion when it merged (row 1: the
    merged " the" ends the PROMPT here, unlike DPO), BOS (<|endoftext|>) put in front of the prompt
    because the tokenizer has a bos_token_id, EOS appended to each completion's ids (also after a
    conversational completion's trailing "\n"), and a completion longer than max_length minus its
    prompt cut to that. TRL 1.16's ORPOConfig and CPOConfig have no max_prompt_length any more
    (max_completion_length is read only for encoder-decoder models; set None), so max_length alone
    applies and the prompt is never cut. is_encoder_decoder False.
    ORPO's loss = NLL of the chosen sequence (mean cross-entropy over ALL its targets, prompt
    tokens included, BOS only as input) - mean(beta * logsigmoid(log_odds)), log_odds from the
    MEAN per-token completion log-probs. Logged: loss, grad_norm, learning_rate, epoch;
    logps/chosen, logps/rejected = mean per-token completion log-probs (means over the pairs);
    rewards/* = beta * those (margins, accuracies as for DPO); nll_loss; log_odds_ratio = mean
    logsigmoid(log_odds); log_odds_chosen = mean log_odds; logits/chosen, logits/rejected = the
    mean of the logits over every position of the padded batch (padding and prompt included) and
    the whole vocabulary.
    CPO/SimPO's loss = mean(-logsigmoid(beta * (chosen - rejected) - gamma)) + cpo_alpha * NLL, with
    chosen, rejected the mean per-token completion log-probs and the NLL over the chosen
    completion's tokens only. Logged as ORPO but without the log_odds_* ones; nll_loss is 0 when
    cpo_alpha is 0. Neither logs entropy, mean_token_accuracy or num_tokens.

Gradient accumulation: each trainer's loss is a mean over the pairs of one micro-batch, and HF
Trainer divides each micro-batch's loss by the number of micro-batches in that optimizer step
(current_gradient_accumulation_steps; none of these losses take num_items_in_batch). The
conversational file has 10 rows: with batch 2 and grad_accum 2 an epoch is 5 micro-batches, i.e.
steps of 2, 2 and 1 micro-batches, and the third step (rows 8-9) is divided by 1, not 2; max_steps
3 ends the run at the end of the epoch, so nothing wraps into a second epoch. The logged loss is
the sum of the divided micro-batch losses (their mean), the other metrics are the means of the
per-micro-batch values, and grad_norm is the norm of the accumulated gradient.
"""
import json
import os
import shutil
import sys
import tempfile

# Pin hash seed so any set -> list conversion (PEFT's target_modules) has a stable order.
if os.environ.get("PYTHONHASHSEED") != "0":
    env = dict(os.environ, PYTHONHASHSEED="0")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import datasets  # noqa: E402
import torch  # noqa: E402
import peft  # noqa: E402
import transformers  # noqa: E402
import trl  # noqa: E402
from datasets import Dataset  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from peft import LoraConfig, PeftModel, get_peft_model  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import (AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM,  # noqa: E402
                          PreTrainedTokenizerFast, PrinterCallback, ProgressCallback,
                          TrainerCallback)
from trl import DPOConfig, DPOTrainer  # noqa: E402
from trl.experimental.cpo import CPOConfig, CPOTrainer  # noqa: E402
from trl.experimental.orpo import ORPOConfig, ORPOTrainer  # noqa: E402

OUT = "tests/fixtures/pref_train"
MODEL = f"{OUT}/model"
VOCAB = 300
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
CHAT_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                 "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

STANDARD = [
    {"prompt": "The cat sat on", "chosen": " the mat.", "rejected": " a hat."},
    {"prompt": "Say th", "chosen": "e end.", "rejected": "e cat."},  # " th" + "e" merge into " the"
    {"prompt": "Water is", "chosen": " wet.", "rejected": " dry."},
    {"prompt": "Tell me about the sea and the sky.",  # prompt + chosen longer than --seq 48: cut
     "chosen": " The sea is blue, the sky is blue, and the sun is hot on the sand.", "rejected": " No."},
    {"prompt": "Two and two make", "chosen": " four.", "rejected": " five."},
    {"prompt": "Name a color:", "chosen": " red", "rejected": " the sea"},
    {"prompt": "The sun is", "chosen": " hot.", "rejected": " cold."},
    {"prompt": "Fish live in", "chosen": " the sea.", "rejected": " trees."},
    {"prompt": "Snow is", "chosen": " white.", "rejected": " black."},
    {"prompt": "Count: one, two,", "chosen": " three", "rejected": " ten"},
]


def msgs(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


CONVERSATIONAL = [
    {"prompt": msgs(("user", "Hi!")), "chosen": msgs(("assistant", "Hello.")), "rejected": msgs(("assistant", "Go."))},
    {"prompt": msgs(("system", "Be kind."), ("user", "Is the sea wet?")),
     "chosen": msgs(("assistant", "Yes, it is.")), "rejected": msgs(("assistant", "No."))},
    {"prompt": msgs(("user", "2+2?")), "chosen": msgs(("assistant", "4")), "rejected": msgs(("assistant", "5"))},
    {"prompt": msgs(("user", "Color of the sky?")), "chosen": msgs(("assistant", "Blue.")),
     "rejected": msgs(("assistant", "Green, I think."))},
    {"prompt": msgs(("system", "Answer in one word."), ("user", "Is snow hot?")),
     "chosen": msgs(("assistant", "No.")), "rejected": msgs(("assistant", "Yes."))},
    {"prompt": msgs(("user", "Where do fish live?")), "chosen": msgs(("assistant", "In the sea.")),
     "rejected": msgs(("assistant", "In the sky."))},
    {"prompt": msgs(("user", "Say a cat sound.")), "chosen": msgs(("assistant", "Meow.")),
     "rejected": msgs(("assistant", "Woof."))},
    {"prompt": msgs(("system", "Be brief."), ("user", "What is the sun?")),
     "chosen": msgs(("assistant", "A star.")), "rejected": msgs(("assistant", "A moon."))},
    {"prompt": msgs(("user", "Count to three.")), "chosen": msgs(("assistant", "1, 2, 3.")),
     "rejected": msgs(("assistant", "1, 3."))},
    {"prompt": msgs(("user", "Thanks!")), "chosen": msgs(("assistant", "You are welcome.")),
     "rejected": msgs(("assistant", "Bye."))},
]


def render(messages, gen=False):
    s = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return s + ("<|im_start|>assistant\n" if gen else "")


def tokenizer_texts():
    texts = []
    for r in STANDARD:
        texts += [r["prompt"] + r["chosen"], r["prompt"] + r["rejected"]]
    for r in CONVERSATIONAL:
        texts += [render(r["prompt"] + r["chosen"]), render(r["prompt"] + r["rejected"])]
    texts += ["the sea and the sky, this and that, then the sun and the cat"] * 4  # " th", " the" become tokens
    for special in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):  # the text between the specials, as encode sees it
        texts = [piece for t in texts for piece in t.split(special) if piece]
    return texts


def make_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(tokenizer_texts(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    fast.chat_template = CHAT_TEMPLATE
    return fast


def write_model():
    tok = make_tokenizer()
    os.makedirs(MODEL, exist_ok=True)
    tok.save_pretrained(MODEL)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
                      initializer_range=0.5, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, dtype="float32")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.float32)
    model.save_pretrained(MODEL, safe_serialization=True)
    # round trip
    tok2 = AutoTokenizer.from_pretrained(MODEL)
    assert len(tok2) == len(tok) and tok2.bos_token_id == tok.bos_token_id and tok2.eos_token_id == tok.eos_token_id
    assert tok2.pad_token_id == tok.pad_token_id and tok2.chat_template == CHAT_TEMPLATE
    for r in STANDARD:
        assert tok2(r["prompt"] + r["chosen"])["input_ids"] == tok(r["prompt"] + r["chosen"])["input_ids"]
    m2 = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    for (k, v), (k2, v2) in zip(model.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k
    return tok


def check_data(tok):
    # row 1: the prompt's last token " th" merges with the completions' "e" into " the"
    p = tok(STANDARD[1]["prompt"])["input_ids"]
    full = tok(STANDARD[1]["prompt"] + STANDARD[1]["chosen"])["input_ids"]
    assert full[:len(p) - 1] == p[:-1] and full[len(p) - 1] != p[-1], "no merge across the split"
    assert tok.convert_ids_to_tokens(full[len(p) - 1]) == "\u0120the"
    # row 3: longer than --seq with its chosen (DPO adds EOS), but the prompt alone is not
    n = len(tok(STANDARD[3]["prompt"] + STANDARD[3]["chosen"] + tok.eos_token)["input_ids"])
    assert n > SEQ and len(tok(STANDARD[3]["prompt"])["input_ids"]) < SEQ - 2, n
    for r in STANDARD:
        assert len(tok(r["prompt"])["input_ids"]) + 1 < SEQ  # no row whose prompt fills --seq (BOS included)
    for r in CONVERSATIONAL:
        assert len(tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True,
                                           return_dict=True)["input_ids"]) + 1 < SEQ


def write_jsonl(name, rows):
    with open(f"{OUT}/{name}", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def load_base():
    return AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32, attn_implementation="eager")


def save_adapter(model, path):
    model.save_pretrained(path, selected_adapters=["default"], safe_serialization=True)
    readme = os.path.join(path, "README.md")
    if os.path.exists(readme):
        os.remove(readme)


def write_adapter(name, seed):
    base = load_base()
    cfg = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=TARGETS, bias="none", task_type="CAUSAL_LM")
    torch.manual_seed(seed)
    model = get_peft_model(base, cfg)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    save_adapter(model, f"{OUT}/{name}")


SEQ = 48
START = f"{OUT}/start"
REF = f"{OUT}/ref"

# name, objective, data, batch, grad_accum, clip, beta, extra trainer options, reference
CASES = [
    ("dpo_standard", "dpo", "standard.jsonl", 2, 1, 1.0, 0.1, {}, "start"),
    ("dpo_conv_accum", "dpo", "conversational.jsonl", 2, 2, 1.0, 0.5, {}, "start"),
    ("ipo_ref_adapter", "ipo", "standard.jsonl", 3, 1, 1.0, 0.1, {}, "ref"),
    ("dpo_ref_none", "dpo", "standard.jsonl", 2, 1, 0.0, 0.2, {}, "none"),
    ("orpo", "orpo", "standard.jsonl", 2, 1, 1.0, 0.1, {}, None),
    ("orpo_conv", "orpo", "conversational.jsonl", 2, 2, 1.0, 0.1, {}, None),
    ("simpo", "simpo", "standard.jsonl", 2, 1, 1.0, 2.0, {"simpo_gamma": 0.5, "cpo_alpha": 0.0}, None),
    ("simpo_alpha", "simpo", "standard.jsonl", 2, 1, 1.0, 2.0, {"simpo_gamma": 0.5, "cpo_alpha": 1.0}, None),
]
LR = 1e-2
STEPS = 3


def num(x):
    return f"{x:g}"


class Capture(TrainerCallback):
    def __init__(self):
        self.steps = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            entry = {"step": state.global_step}
            for k, v in logs.items():
                entry[k] = float(v)
            self.steps.append(entry)


def run_case(tok, name, objective, data, batch, accum, clip, beta, extra, reference):
    rows = STANDARD if data == "standard.jsonl" else CONVERSATIONAL
    dataset = Dataset.from_list(rows)
    cli = ["--objective", objective, "--adapter", START, "--seq", str(SEQ), "--batch", str(batch),
           "--grad-accum", str(accum), "--max-steps", str(STEPS), "--lr", num(LR), "--schedule", "constant",
           "--warmup", "0", "--weight-decay", "0", "--clip", num(clip), "--no-shuffle", "--save-every", "0",
           "--beta", num(beta)]
    common = dict(per_device_train_batch_size=batch, gradient_accumulation_steps=accum, max_steps=STEPS,
                  learning_rate=LR, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
                  adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, optim="adamw_torch", max_grad_norm=clip,
                  logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, bf16=False, fp16=False,
                  gradient_checkpointing=False, seed=0, data_seed=0, train_sampling_strategy="sequential",
                  dataloader_drop_last=False, dataloader_num_workers=0, disable_dropout=True, max_length=SEQ,
                  beta=beta)
    torch.manual_seed(0)
    model = PeftModel.from_pretrained(load_base(), START, is_trainable=True)
    cap = Capture()
    with tempfile.TemporaryDirectory() as d:
        if objective in ("dpo", "ipo"):
            ref_model = None
            if reference == "ref":
                ref_model = PeftModel.from_pretrained(load_base(), REF).get_base_model()  # LoRA layers, unmerged
                cli += ["--ref-adapter", REF]
            elif reference == "none":
                ref_model = load_base()
                cli += ["--ref-adapter", "none"]
            if ref_model is not None:
                ref_model.eval()
                ref_model.requires_grad_(False)
            args = DPOConfig(output_dir=d, loss_type=["sigmoid" if objective == "dpo" else "ipo"],
                             precompute_ref_log_probs=False, padding_free=False, truncation_mode="keep_start",
                             **common, **extra)
            trainer = DPOTrainer(model=model, ref_model=ref_model, args=args, train_dataset=dataset,
                                 processing_class=tok, callbacks=[cap])
            if reference == "start":
                assert "ref" in model.peft_config  # the frozen copy of the starting adapter
        elif objective == "orpo":
            args = ORPOConfig(output_dir=d, max_completion_length=None, remove_unused_columns=False, is_encoder_decoder=False, **common, **extra)
            trainer = ORPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok, callbacks=[cap])
        else:
            args = CPOConfig(output_dir=d, loss_type="simpo", max_completion_length=None, remove_unused_columns=False, is_encoder_decoder=False,
                             alpha=0.0, label_smoothing=0.0, **common, **extra)
            trainer = CPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok, callbacks=[cap])
            cli += ["--simpo-gamma", num(extra["simpo_gamma"]), "--cpo-alpha", num(extra["cpo_alpha"])]
        for cb in (ProgressCallback, PrinterCallback):
            trainer.remove_callback(cb)
        kept = len(trainer.train_dataset)
        trainer.train()
    assert [s["step"] for s in cap.steps] == list(range(1, STEPS + 1)), cap.steps
    for s in cap.steps:
        assert all(v == v and abs(v) != float("inf") for v in s.values()), s
    if reference == "start":  # the "ref" copy stayed the starting adapter
        start = load_file(f"{START}/adapter_model.safetensors")
        ref = {n.replace(".ref.", "."): p for n, p in model.named_parameters() if ".ref." in n}
        assert len(ref) == len(start)
        for n, p in ref.items():
            assert torch.equal(p.detach(), start[n]), n
    save_adapter(model, f"{OUT}/out_{name}")
    return {"name": name, "objective": objective, "data": data, "args": cli, "pairs_kept": kept,
            "steps": cap.steps, "adapter": f"out_{name}/adapter_model.safetensors"}


def main():
    torch.set_num_threads(1)
    assert trl.__version__.startswith("1.16."), trl.__version__  # the trainers' behaviour described above
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    check_data(write_model())
    tok = AutoTokenizer.from_pretrained(MODEL)  # as saved
    write_jsonl("standard.jsonl", STANDARD)
    write_jsonl("conversational.jsonl", CONVERSATIONAL)
    write_adapter("start", 1)
    write_adapter("ref", 2)
    cases = []
    for c in CASES:
        case = run_case(tok, *c)
        cases.append(case)
        print(case["name"], case["pairs_kept"], [(s["loss"], s["grad_norm"]) for s in case["steps"]])
    with open(f"{OUT}/cases.json", "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
