#!/usr/bin/env python3
"""Build tests/fixtures/rope/cases.json: RoPE frequencies and cos/sin factors as transformers computes them.

Run from the repository root (needs torch and transformers; CPU only, a few seconds):

    python3 tools/make_rope_fixtures.py            # writes tests/fixtures/rope/cases.json
    python3 tools/make_rope_fixtures.py --out F    # write somewhere else (to diff against the committed copy)

Each case is a config.json (as a user's checkpoint spells it: rope_scaling in the 4.x way or rope_parameters
in the 5.x way) loaded with AutoConfig.from_pretrained, and the model's own rotary embedding built from it:

    {"name": ..., "config": {...config.json...},
     "inv_freq": [...],            rotary_emb.inv_freq (f32, printed with repr so it reads back exactly)
     "inv_freq_long": [...],       longrope only: the frequencies past original_max_position_embeddings
     "attention_factor": x}        rotary_emb.attention_scaling (cos and sin are multiplied by it)

The C test (tests/test_rope_parity.c) loads each config with fl_config_load and compares fastlora's
frequencies and factor. Not run in CI; running it twice gives the same file.
"""

import argparse
import importlib
import json
import os
import tempfile
import warnings

import torch
import transformers
from transformers import AutoConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS


def base(model_type, **kw):
    c = {"model_type": model_type, "vocab_size": 64, "hidden_size": 64, "intermediate_size": 96,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "pad_token_id": 0}
    c["architectures"] = [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                           "mistral": "MistralForCausalLM", "phi3": "Phi3ForCausalLM",
                           "olmo3": "Olmo3ForCausalLM"}[model_type]]
    c.update(kw)
    return c


YARN = lambda **kw: dict({"rope_type": "yarn"}, **kw)   # noqa: E731

CASES = [
    # Qwen3-8B's model-card recipe for 131k tokens, 4.x spelling (head_dim 128, theta 1e6)
    ("qwen3_yarn_card", base("qwen3", hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                             max_position_embeddings=131072, rope_theta=1000000.0,
                             rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})),
    # Qwen2.5's recipe, the old key "type" (head_dim 64 = 896 / 14)
    ("qwen2_yarn_type_key", base("qwen2", hidden_size=896, num_attention_heads=14, num_key_value_heads=2,
                                 max_position_embeddings=32768, rope_theta=1000000.0,
                                 rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})),
    # 5.x spelling, the betas and truncate false: fractional correction dims
    ("llama_yarn_betas_untruncated", base("llama", head_dim=32, rope_parameters=YARN(
        rope_theta=10000.0, factor=8.0, beta_fast=8, beta_slow=0.5, truncate=False, original_max_position_embeddings=512))),
    ("llama_yarn_betas_truncated", base("llama", head_dim=32, rope_parameters=YARN(
        rope_theta=10000.0, factor=8.0, beta_fast=8, beta_slow=0.5, original_max_position_embeddings=512))),
    # DeepSeek-style mscale pair: attention factor get_mscale(f, 0.707) / get_mscale(f, 0.707) = 1
    ("qwen3_yarn_mscale_equal", base("qwen3", head_dim=16, rope_parameters=YARN(
        rope_theta=10000.0, factor=40.0, mscale=0.707, mscale_all_dim=0.707, original_max_position_embeddings=64))),
    ("qwen3_yarn_mscale_ratio", base("qwen3", head_dim=16, rope_parameters=YARN(
        rope_theta=10000.0, factor=16.0, mscale=1.0, mscale_all_dim=0.5, original_max_position_embeddings=64))),
    # only one of the pair: the plain 0.1 ln(factor) + 1
    ("qwen3_yarn_mscale_alone", base("qwen3", head_dim=16, rope_parameters=YARN(
        rope_theta=10000.0, factor=16.0, mscale=2.0, original_max_position_embeddings=64))),
    ("mistral_yarn_attention_factor", base("mistral", head_dim=16, rope_parameters=YARN(
        rope_theta=1000000.0, factor=2.0, attention_factor=1.25, original_max_position_embeddings=1024))),
    # factor null: max_position_embeddings / original
    ("llama_yarn_factor_null", base("llama", head_dim=16, max_position_embeddings=8192, rope_parameters=YARN(
        rope_theta=500000.0, factor=None, original_max_position_embeddings=2048))),
    # none in the scaling object: a top-level one (else max_position_embeddings)
    ("qwen2_yarn_no_original", base("qwen2", original_max_position_embeddings=1024, rope_scaling={
        "type": "yarn", "factor": 2.0})),
    # both: the top-level one wins (the rotary embedding re-runs standardize_rope_params, which copies a
    # config attribute original_max_position_embeddings over the scaling object's)
    ("qwen3_yarn_original_both", base("qwen3", head_dim=16, original_max_position_embeddings=1024, rope_parameters=YARN(
        rope_theta=10000.0, factor=4.0, original_max_position_embeddings=64))),
    ("llama3_original_both", base("llama", head_dim=64, max_position_embeddings=8192, original_max_position_embeddings=512,
                                  rope_theta=500000.0, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 4096})),
    ("llama_yarn_factor_below_one", base("llama", head_dim=16, rope_parameters=YARN(
        rope_theta=10000.0, factor=0.5, original_max_position_embeddings=256))),
    # a pretraining length under 2 pi: both correction dims clamp to 0 (transformers' "prevent singularity")
    ("llama_yarn_short_original", base("llama", head_dim=32, rope_parameters=YARN(
        rope_theta=10000.0, factor=4.0, original_max_position_embeddings=4))),
    ("qwen3_yarn_partial_rotary", base("qwen3", head_dim=32, rope_parameters=YARN(
        rope_theta=10000.0, factor=4.0, partial_rotary_factor=0.5, original_max_position_embeddings=256))),
    # the other types, for breadth
    ("llama_default_theta", base("llama", rope_theta=500000.0)),
    ("llama_linear", base("llama", rope_scaling={"type": "linear", "factor": 2.5})),
    ("qwen2_linear_below_one", base("qwen2", rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 0.5})),
    ("llama3_no_original", base("llama", head_dim=64, max_position_embeddings=8192, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}, rope_theta=500000.0)),
    ("llama3_31_card", base("llama", head_dim=128, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                            max_position_embeddings=131072, rope_theta=500000.0, rope_scaling={
                                "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192})),
    # Phi3Config's own original_max_position_embeddings (default 4096) wins over the scaling object's
    ("phi3_longrope_original_in_scaling", base("phi3", hidden_size=64, num_attention_heads=4, num_key_value_heads=4,
                                               max_position_embeddings=16384, rope_scaling={
        "type": "longrope", "short_factor": [1.0, 1.1, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0],
        "long_factor": [1.2, 1.9, 2.8, 4.0, 6.0, 8.0, 11.0, 16.0], "original_max_position_embeddings": 512})),
    ("phi3_longrope_top_level", base("phi3", hidden_size=64, num_attention_heads=4, num_key_value_heads=4,
                                     max_position_embeddings=8192, original_max_position_embeddings=2048,
                                     partial_rotary_factor=0.75, rope_scaling={
        "type": "longrope", "short_factor": [1.0, 1.25, 1.5, 2.0, 2.5, 3.0],
        "long_factor": [1.5, 2.0, 3.0, 5.0, 7.0, 9.0]})),
    # dynamic NTK: the frequencies the module builds at init (seq_len = max_position_embeddings), which it keeps
    # for every forward within max_position_embeddings. 4.x key "type", then 5.x rope_parameters
    ("llama_dynamic_type_key", base("llama", rope_scaling={"type": "dynamic", "factor": 2.0})),
    ("qwen2_dynamic_rope_parameters", base("qwen2", max_position_embeddings=32768, rope_parameters={
        "rope_type": "dynamic", "rope_theta": 1000000.0, "factor": 4.0})),
    # factors where factor * M / M - (factor - 1) is not 1 in double: the base moves (a few ulps, then by 1.125)
    ("mistral_dynamic_base_off_by_ulps", base("mistral", head_dim=16, max_position_embeddings=3, rope_parameters={
        "rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1000000000.3})),
    ("qwen3_dynamic_partial_base_moved", base("qwen3", head_dim=32, max_position_embeddings=3, rope_parameters={
        "rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1000000000000000.2, "partial_rotary_factor": 0.5})),
    # OLMo 3: the full layers' RoPE and the sliding layers' ("inv_freq_local", "attention_factor_local").
    # Olmo-3-1025-7B's fields, 4.x spelling: yarn over rope_scaling on the full layers, both at 500000
    ("olmo3_7b_card", base("olmo3", hidden_size=4096, num_attention_heads=32, num_key_value_heads=32,
                           num_hidden_layers=8, max_position_embeddings=65536, rope_theta=500000, sliding_window=4096,
                           rope_scaling={"attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1,
                                         "factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "yarn"})),
    # a top-level rope_theta reaches the full layers only: the sliding ones keep 500000
    ("olmo3_top_theta_full_only", base("olmo3", num_hidden_layers=4, rope_theta=10000.0, rope_scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512})),
    # 5.x keyed by layer type: the full entry's truncate false is never read (transformers looks at the top of
    # rope_parameters) and its missing pretraining length is max_position_embeddings
    ("olmo3_nested_truncate_ignored", base("olmo3", num_hidden_layers=4, head_dim=32, rope_parameters={
        "full_attention": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "beta_fast": 8, "beta_slow": 0.5,
                           "truncate": False},
        "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}})),
    ("olmo3_default", base("olmo3", num_hidden_layers=4)),
]


def floats(t):
    return [float(x) for x in t.float().tolist()]


def case(name, cfg_json):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg_json, f)
        cfg = AutoConfig.from_pretrained(d)
    # the family's own rotary embedding module, as its model builds it (not the whole model: the real
    # sizes here would take gigabytes)
    mt = cfg_json["model_type"]
    modeling = importlib.import_module(f"transformers.models.{mt}.modeling_{mt}")
    rot_cls = next(getattr(modeling, k) for k in dir(modeling) if k.endswith("RotaryEmbedding"))
    rot = rot_cls(config=cfg)
    if mt == "olmo3":   # one table per layer type
        out = {"name": name, "config": cfg_json, "inv_freq": floats(rot.full_attention_inv_freq),
               "attention_factor": float(rot.full_attention_attention_scaling),
               "inv_freq_local": floats(rot.sliding_attention_inv_freq),
               "attention_factor_local": float(rot.sliding_attention_attention_scaling)}
        print(f"  {name}: full {cfg.rope_parameters['full_attention']}, sliding {cfg.rope_parameters['sliding_attention']}")
        return out
    out = {"name": name, "config": cfg_json, "inv_freq": floats(rot.inv_freq),
           "attention_factor": float(rot.attention_scaling)}
    rp = cfg.rope_parameters
    if rp.get("rope_type") == "longrope":
        long, attn = ROPE_INIT_FUNCTIONS["longrope"](cfg, None, seq_len=rp["original_max_position_embeddings"] + 1)
        out["inv_freq_long"] = floats(long)
        assert abs(attn - out["attention_factor"]) < 1e-12
    print(f"  {name}: {len(out['inv_freq'])} pairs, attention factor {out['attention_factor']:.6f}, "
          f"rope_parameters {rp}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join("tests", "fixtures", "rope", "cases.json"))
    args = ap.parse_args()
    torch.manual_seed(0)
    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    cases = [case(n, c) for n, c in CASES]
    meta = {"generator": f"tools/make_rope_fixtures.py torch {torch.__version__.split('+')[0]} "
                         f"transformers {transformers.__version__}", "cases": cases}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
