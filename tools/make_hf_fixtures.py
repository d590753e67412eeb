#!/usr/bin/env python3
"""Build the HF/PEFT reference fixtures under tests/fixtures/hf/ from an independent implementation.

Run from the repository root (needs torch, transformers, peft, safetensors, numpy; CPU only):

    python3 tools/make_hf_fixtures.py            # writes tests/fixtures/hf/<name>/ for every model
    python3 tools/make_hf_fixtures.py --out DIR  # write somewhere else (e.g. to diff against the committed copy)

The C tests read only the committed files; this script is not run in CI.  Running it twice gives
byte-identical files (fixed seeds, one CPU thread, PYTHONHASHSEED pinned by re-exec).

For each model <name> it writes tests/fixtures/hf/<name>/:
  model/                  HF model folder from model.save_pretrained(dir, safe_serialization=True):
                          config.json (+ generation_config.json) and model.safetensors (F32; no lm_head.weight
                          when tie_word_embeddings is true).
  adapter/                PEFT adapter from peft_model.save_pretrained(dir): adapter_config.json,
                          adapter_model.safetensors (F32 lora_A/lora_B; lora_A = PEFT's kaiming init,
                          lora_B = random normal, NOT zero, so the adapter changes the logits), README.md (PEFT
                          model card, not used).
  expected.safetensors    (safetensors.torch.save_file; all tensors contiguous)
      input_ids           I32 [B,T]
      labels              I32 [B,T]  = input_ids with some positions -100 (row 0: first 3 tokens; row 1: a stretch
                                      in the middle).  UNshifted: the loss uses target[t] = labels[t+1], last = -100
                                      (transformers ForCausalLMLoss), mean over the non-ignored targets.
      logits              F32 [B,T,V] PEFT model, adapter active, train mode, dropout 0, no attention_mask
      loss                F32 [1]     model(input_ids, labels=labels).loss for the same forward
      grad.<key>          F32         d loss / d <key> (one backward on a fresh model), for every <key> in
                                      adapter_model.safetensors, e.g.
                                      grad.base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight
      step3.<key>         F32         the adapter tensor after 3 steps on this same batch; each step =
                                      zero_grad; loss.backward(); clip_grad_norm_(lora params, max_grad_norm);
                                      AdamW(lora params, lr, betas=(beta1,beta2), eps, weight_decay).step()
      step3.loss          F32 [3]     loss at each of the 3 steps, before that step's update
      step3.grad_norm     F32 [3]     total L2 grad norm (before clipping) at each step
      __metadata__        lr, beta1, beta2, eps, weight_decay, max_grad_norm, steps, r, lora_alpha, use_rslora,
                          target_modules (comma-separated), seed, plus a few informative extras.
See tests/fixtures/hf/README.md for the conventions the C test relies on.
"""

import argparse
import json
import math
import os
import shutil
import struct
import sys
import warnings

# Pin hash seed so any set -> list conversion (PEFT's target_modules) has a stable order.
if os.environ.get("PYTHONHASHSEED") != "0":
    env = dict(os.environ, PYTHONHASHSEED="0")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import transformers  # noqa: E402
import peft  # noqa: E402
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,  # noqa: E402
                          Phi3Config, Phi3ForCausalLM, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM,
                          GemmaConfig, GemmaForCausalLM, Gemma2Config, Gemma2ForCausalLM, Gemma3TextConfig, Gemma3ForCausalLM, Gemma3Config,
                          Gemma3ForConditionalGeneration, SmolLM3Config, SmolLM3ForCausalLM,
                          GraniteConfig, GraniteForCausalLM, Olmo2Config, Olmo2ForCausalLM,
                          Olmo3Config, Olmo3ForCausalLM, Mistral3Config, Mistral3ForConditionalGeneration,
                          Ministral3Config, Ministral3ForCausalLM)
from peft import LoraConfig, PeftModel, get_peft_model  # noqa: E402
from peft.utils import get_peft_model_state_dict  # noqa: E402

ALL_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# a vision-language model's LoRA: PEFT's full-match regex over the language model's layers (a list of
# names would adapt the vision tower's q/k/v_proj too)
VLM_LORA = dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS,
                peft_target_modules=r"model\.language_model\.layers\.\d+\.(self_attn|mlp)\.("
                                    + "|".join(ALL_TARGETS) + ")")
PHI3_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]   # Phi-3's modules: q/k/v and gate/up fused

# --------------------------------------------------------------------------------------------------
# Model specs.  Dimensions are deliberately not powers of two where the architecture allows.
# --------------------------------------------------------------------------------------------------
SPECS = [
    dict(
        name="llama_gqa",
        arch="llama",
        seed=1234,
        config=dict(
            vocab_size=200, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,            # GQA, head_dim derived = 16
            max_position_embeddings=128, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            tie_word_embeddings=False,                               # untied lm_head
        ),
        B=2, T=16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1, max_grad_norm=1e3),
        expect_clip=False,
    ),
    dict(
        name="qwen2_bias_tied",
        arch="qwen2",
        seed=5678,
        config=dict(
            vocab_size=160, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=6, num_key_value_heads=2,            # head_dim derived = 8
            max_position_embeddings=128, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            tie_word_embeddings=True,
            use_sliding_window=False,
        ),
        B=2, T=12,
        lora=dict(r=8, lora_alpha=16, use_rslora=True, target_modules=["q_proj", "v_proj", "down_proj"]),
        opt=dict(lr=5e-3, beta1=0.8, beta2=0.95, eps=1e-4, weight_decay=0.0, max_grad_norm=0.1),
        expect_clip=True,
    ),
    dict(
        name="llama3_rope",
        arch="llama",
        seed=91011,
        config=dict(
            vocab_size=128, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,   # explicit head_dim: q dim 64 != hidden 48
            max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_parameters={
                "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
            tie_word_embeddings=True,
        ),
        B=2, T=16,
        lora=dict(r=4, lora_alpha=16, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=2e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.01, max_grad_norm=1.0),
        expect_clip=None,   # don't care
    ),
    dict(
        # dynamic NTK over sequences of max_position_embeddings: transformers keeps the init
        # frequencies, base theta * (factor * M / M - (factor - 1)) ** (RD / (RD - 2)); a factor of 1e15 + 0.2
        # over M = 12 leaves 1.125 in double, so the base is 114.4, not 100
        name="llama_dynamic_ntk",
        arch="llama",
        seed=313233,
        config=dict(
            vocab_size=128, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=12, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "dynamic", "rope_theta": 100.0, "factor": 1000000000000000.2},
            tie_word_embeddings=False,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=16, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=2e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.01, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="mistral_window",
        arch="mistral",
        seed=121314,
        config=dict(
            vocab_size=150, hidden_size=40, intermediate_size=72, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=1, head_dim=12,   # MQA; explicit head_dim (as Nemo): q dim 48 != 40
            max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            sliding_window=32,                                           # a window, longer than T: it does not bind
            tie_word_embeddings=False,
        ),
        B=2, T=16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="mistral_swa",
        arch="mistral",
        seed=181920,
        config=dict(
            vocab_size=120, hidden_size=40, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=12,   # GQA; explicit head_dim: q dim 48 != 40
            max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            sliding_window=5,                                            # binds: 16 positions, each sees its last 5
            tie_word_embeddings=False,
        ),
        B=2, T=16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="qwen3_qk_norm",
        arch="qwen3",
        seed=151617,
        config=dict(
            vocab_size=96, hidden_size=24, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=12,   # GQA; explicit head_dim: q dim 48 != 24
            max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            tie_word_embeddings=True, attention_bias=False,
            use_sliding_window=False, sliding_window=None, max_window_layers=2,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),   # q, k: through q_norm, k_norm
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # YaRN on Qwen3 (5.x spelling): theta 100 and beta_fast 4 put the correction range at pairs 1..5 of 8
        # (floor 1.62, ceil 4.03): pairs 0-1 extrapolate, 2-4 blend, 5-7 interpolate (/ factor 4); cos and sin
        # times 0.1 ln 4 + 1
        name="qwen3_yarn",
        arch="qwen3",
        seed=252627,
        config=dict(
            vocab_size=64, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16,
            max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "beta_fast": 4,
                             "original_max_position_embeddings": 64},
            tie_word_embeddings=True, attention_bias=False,
            use_sliding_window=False, sliding_window=None, max_window_layers=2,
        ),
        B=2, T=16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # Ministral 3 / Devstral 2's language model: Mistral's layers, YaRN (theta 100, factor 4 over 32
        # positions, beta_fast 4: pair 0 extrapolates, 1-2 blend, 3-7 interpolate; mscale = mscale_all_dim
        # = 1, so cos/sin keep factor 1, as the released configs) and the per-position q factor
        # 1 + beta·ln(1 + floor(p / 32)) after RoPE (llama_4_scaling_beta 0.5): positions 32-39 of T 40
        # get 1 + 0.5 ln 2; the script checks that beta 0 moves exactly those positions' logits
        name="ministral3_llama4",
        arch="ministral3",
        seed=303132,
        config=dict(
            vocab_size=64, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "beta_fast": 4.0,
                             "beta_slow": 1.0, "original_max_position_embeddings": 32, "mscale": 1.0,
                             "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.5},
            tie_word_embeddings=False, sliding_window=None,
        ),
        B=2, T=40,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # OLMo 3: OLMo 2's layers; layers 0-2 slide (window 5 over 16 positions) on a default RoPE of base 1000,
        # layer 3 (every 4th) is full with YaRN (theta 100, factor 4, beta_fast 4: pairs 0-1 extrapolate, 2-4
        # blend, 5-7 interpolate) and its cos/sin factor 0.1 ln 4 + 1 (the sliding layers' stays 1)
        name="olmo3_sliding_yarn",
        arch="olmo3",
        seed=282930,
        config=dict(
            vocab_size=64, hidden_size=32, intermediate_size=40, num_hidden_layers=4,
            num_attention_heads=2, num_key_value_heads=1,                # head_dim = 32 / 2 = 16; GQA
            max_position_embeddings=256, rms_norm_eps=1e-6, sliding_window=5,
            rope_parameters={
                "full_attention": {"rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "beta_fast": 4,
                                   "original_max_position_embeddings": 64},
                "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0},
            },
            tie_word_embeddings=False, pad_token_id=0,
        ),
        B=2, T=16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # OLMo 2: no pre-norms, post-attention / post-feedforward norms before each residual add, q_norm and
        # k_norm over the whole q (32) and k (16) rows (GQA: the widths differ), untied LM head
        name="olmo2_post_norms",
        arch="olmo2",
        seed=202122,
        config=dict(
            vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,   # head_dim = 32 / 4 = 8 (Olmo2Config has no head_dim)
            max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
            tie_word_embeddings=False, attention_bias=False,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),   # q, k: through q_norm, k_norm
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="gemma3_sandwich",
        arch="gemma3_text",
        seed=181920,
        config=dict(
            vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=12,   # GQA; explicit head_dim: q dim 48 != 32
            query_pre_attn_scalar=20,                                    # attention scale 20^-0.5, not 12^-0.5
            max_position_embeddings=256, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
            # binds: 12 positions, layer 0 sees its last 5 (with the local RoPE), layer 1 all (global RoPE)
            layer_types=["sliding_attention", "full_attention"], sliding_window=5,
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0}},
            tie_word_embeddings=True, attention_bias=False,
            final_logit_softcapping=None, attn_logit_softcapping=None,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # Granite 3.x: Llama's layers and four scalars, each far from 1 so that each binds (the script
        # checks that setting any one of them to 1 moves the logits)
        name="granite_multipliers",
        arch="granite",
        seed=303132,
        config=dict(
            vocab_size=80, hidden_size=24, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
            embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=4.0,
            rope_parameters={"rope_type": "default", "rope_theta": 10000000.0},
            tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # SmolLM3: Llama's layers with RoPE skipped on every 4th (its NoPE layers, no_rope_layers)
        name="smollm3_nope",
        arch="smollm3",
        seed=272829,
        config=dict(
            vocab_size=88, hidden_size=24, intermediate_size=40, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
            no_rope_layer_interval=4,                        # layer 3 (counting from 0) attends without RoPE
            rope_parameters={"rope_type": "default", "rope_theta": 5000000.0},
            tie_word_embeddings=True, attention_bias=False, mlp_bias=False, use_sliding_window=False,
            pad_token_id=0,                                  # SmolLM3Config's 128004 is past this vocabulary
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # Gemma 3 4B/12B/27B: the language model inside Gemma3ForConditionalGeneration (text_config; the
        # checkpoint's language_model.model.* tensors beside a vision tower and projector that text-only
        # input never runs), its LoRA restricted to the language model by PEFT's regex target_modules
        name="gemma3_vlm",
        arch="gemma3",
        seed=242526,
        config=dict(
            text_config=dict(
                vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=12, query_pre_attn_scalar=12,
                max_position_embeddings=256, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                layer_types=["sliding_attention", "full_attention"], sliding_window=5,
                rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                 "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}},
                attention_bias=False, final_logit_softcapping=None, attn_logit_softcapping=None,
                bos_token_id=1, eos_token_id=2, attention_dropout=0.0),
            vision_config=dict(hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                               image_size=28, patch_size=14),
            mm_tokens_per_image=4, image_token_index=95, boi_token_index=93, eoi_token_index=94,
            tie_word_embeddings=True,
        ),
        B=2, T=12,
        lora=VLM_LORA,
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # Mistral Small 3.1 / 3.2: the language model inside Mistral3ForConditionalGeneration (a Mistral
        # text_config; the checkpoint's language_model.model.* tensors and an untied
        # language_model.lm_head beside a Pixtral vision tower and projector that text-only input never
        # runs), its LoRA restricted to the language model by PEFT's regex target_modules
        name="mistral3_vlm",
        arch="mistral3",
        seed=272829,
        config=dict(
            text_config=dict(
                model_type="mistral", vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=12, max_position_embeddings=256,
                rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 1000000000.0},
                sliding_window=None,
                bos_token_id=1, eos_token_id=2, attention_dropout=0.0),
            vision_config=dict(model_type="pixtral", hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                               num_attention_heads=2, head_dim=8, image_size=28, patch_size=14),
            image_token_index=95, spatial_merge_size=2, projector_hidden_act="gelu",
            multimodal_projector_bias=False, vision_feature_layer=-1,
            tie_word_embeddings=False,
        ),
        B=2, T=12,
        lora=VLM_LORA,
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        # Gemma (1): Llama's layer with Gemma's x·(1 + w) norms (two per layer), GeGLU (the legacy "gelu",
        # which GemmaConfig reads as gelu_pytorch_tanh) and embeddings × √32; multi-query as the 2B; scores
        # scaled by head_dim^-0.5
        name="gemma_geglu",
        arch="gemma",
        seed=343536,
        config=dict(
            vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=1, head_dim=12,
            max_position_embeddings=256, rms_norm_eps=1e-6, hidden_act="gelu",
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            tie_word_embeddings=True, attention_bias=False,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=0.4),
        expect_clip=True,
    ),
    dict(
        name="gemma2_softcap",
        arch="gemma2",
        seed=212223,
        config=dict(
            vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=12,
            query_pre_attn_scalar=20,
            max_position_embeddings=256, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
            layer_types=["sliding_attention", "full_attention"], sliding_window=16,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            tie_word_embeddings=True, attention_bias=False,
            final_logit_softcapping=3.0,                 # small cap: the logits (|z| ~ 4) sit on tanh's curve
            attn_logit_softcapping=None,                 # gemma2_attn_softcap caps the attention scores
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="gemma2_attn_softcap",
        arch="gemma2",
        seed=242526,
        config=dict(
            vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=12,
            query_pre_attn_scalar=20,
            max_position_embeddings=256, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
            # binds: 12 positions, layer 0 sees its last 5, layer 1 all
            layer_types=["sliding_attention", "full_attention"], sliding_window=5,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            tie_word_embeddings=True, attention_bias=False,
            final_logit_softcapping=3.0,
            attn_logit_softcapping=0.2,                  # binds: without it the logits move by ~0.47 (checked below)
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="qwen3_swa",
        arch="qwen3",
        seed=222324,
        config=dict(
            vocab_size=80, hidden_size=24, intermediate_size=32, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, head_dim=8,    # GQA; explicit head_dim: q dim 32 != 24
            max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            tie_word_embeddings=True, attention_bias=False,
            # Qwen3Config: layers i >= max_window_layers slide -> layer 0 full, layers 1 and 2 see their last 4
            use_sliding_window=True, sliding_window=4, max_window_layers=1,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL_TARGETS),
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
    dict(
        name="phi3_longrope",
        arch="phi3",
        seed=181920,
        config=dict(
            vocab_size=64, hidden_size=32, intermediate_size=24, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,                # GQA; head_dim 8 = hidden / heads
            max_position_embeddings=64, original_max_position_embeddings=8, rms_norm_eps=1e-5,
            # partial rotary 0.75: RD 6 of HS 8 (pairs j, j + 3; 2 dims pass through); longrope with T 12 past
            # original_max_position_embeddings 8, so the long factors apply; attention factor
            # sqrt(1 + ln(64/8) / ln 8) = sqrt(2)
            rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                             "short_factor": [1.0, 1.3, 2.1], "long_factor": [1.1, 2.7, 5.3],
                             "original_max_position_embeddings": 8},
            sliding_window=64,                                           # every layer; longer than T: it does not bind
            tie_word_embeddings=False, pad_token_id=0,
        ),
        B=2, T=12,
        lora=dict(r=4, lora_alpha=8, use_rslora=False, target_modules=PHI3_TARGETS),   # one LoRA per fused module
        opt=dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_grad_norm=1.0),
        expect_clip=None,
    ),
]

STEPS = 3


def build_base(spec):
    """Random base model, float32, eager attention, deterministic weights."""
    cfg_cls, model_cls = {"llama": (LlamaConfig, LlamaForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM),
                          "mistral": (MistralConfig, MistralForCausalLM),
                          "qwen3": (Qwen3Config, Qwen3ForCausalLM), "phi3": (Phi3Config, Phi3ForCausalLM),
                          "gemma": (GemmaConfig, GemmaForCausalLM), "gemma2": (Gemma2Config, Gemma2ForCausalLM),
                          "gemma3_text": (Gemma3TextConfig, Gemma3ForCausalLM),
                          "gemma3": (Gemma3Config, Gemma3ForConditionalGeneration),
                          "mistral3": (Mistral3Config, Mistral3ForConditionalGeneration),
                          "smollm3": (SmolLM3Config, SmolLM3ForCausalLM),
                          "granite": (GraniteConfig, GraniteForCausalLM),
                          "olmo2": (Olmo2Config, Olmo2ForCausalLM),
                          "olmo3": (Olmo3Config, Olmo3ForCausalLM),
                          "ministral3": (Ministral3Config, Ministral3ForCausalLM)}[spec["arch"]]
    gemma = spec["arch"].startswith("gemma")
    if spec["arch"] in ("gemma3", "mistral3"):   # the text model's settings are inside text_config
        cfg = cfg_cls(**spec["config"])
    else:
        cfg = cfg_cls(**spec["config"], bos_token_id=1, eos_token_id=2, attention_dropout=0.0)
    torch.manual_seed(spec["seed"])
    model = model_cls(cfg).to(torch.float32)
    model.config._attn_implementation = "eager"  # the reference math in formats.md section 2
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():   # named_parameters() dedups the tied lm_head
            if name.endswith("norm.weight"):   # Gemma's norms store w - 1: the same spread around 1
                p.copy_((0.0 if gemma else 1.0) + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name or "lm_head" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=g))
    model.eval()
    return model


def text_config(spec):
    """The language model's settings: the config itself, or a vision-language config's text_config."""
    return spec["config"].get("text_config", spec["config"])


def lora_config(spec):
    lc = spec["lora"]
    return LoraConfig(
        r=lc["r"], lora_alpha=lc["lora_alpha"], use_rslora=lc["use_rslora"],
        target_modules=lc.get("peft_target_modules") or list(lc["target_modules"]), lora_dropout=0.0, bias="none",
        task_type="CAUSAL_LM", init_lora_weights=True,
    )


def peft_key(param_name):
    """PEFT parameter name -> key in adapter_model.safetensors (adapter name 'default' stripped)."""
    assert ".default." in param_name, param_name
    return param_name.replace(".default.", ".")


def lora_params(pm):
    return [(peft_key(n), p) for n, p in pm.named_parameters() if "lora_" in n]


def make_batch(spec):
    g = torch.Generator().manual_seed(spec["seed"] + 2)
    B, T, V = spec["B"], spec["T"], text_config(spec)["vocab_size"]
    ids = torch.randint(0, V, (B, T), generator=g, dtype=torch.int64)
    labels = ids.clone()
    labels[0, :3] = -100                    # prompt masking, row 0
    labels[1, T // 4: T // 4 + 5] = -100    # a stretch in row 1
    return ids, labels


def load_trainable(model_dir, adapter_dir):
    base = build_loaded_base(model_dir)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pm = PeftModel.from_pretrained(base, adapter_dir, is_trainable=True)
    bad = [str(x.message) for x in w if "missing" in str(x.message).lower() or "unexpected" in str(x.message).lower()]
    assert not bad, bad
    pm.train()
    return pm


def build_loaded_base(model_dir):
    cfg = transformers.AutoConfig.from_pretrained(model_dir)
    cls = {"llama": LlamaForCausalLM, "qwen3": Qwen3ForCausalLM, "mistral": MistralForCausalLM,
           "phi3": Phi3ForCausalLM, "gemma": GemmaForCausalLM, "gemma2": Gemma2ForCausalLM,
           "gemma3_text": Gemma3ForCausalLM, "gemma3": Gemma3ForConditionalGeneration,
           "mistral3": Mistral3ForConditionalGeneration, "ministral3": Ministral3ForCausalLM,
           "smollm3": SmolLM3ForCausalLM, "granite": GraniteForCausalLM,
           "olmo2": Olmo2ForCausalLM, "olmo3": Olmo3ForCausalLM}.get(cfg.model_type, Qwen2ForCausalLM)
    m = cls.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    return m


def save_file_reproducible(tensors, path, meta):
    """safetensors.torch.save_file, then rewrite the JSON header with __metadata__ keys sorted.

    The safetensors writer keeps __metadata__ in a Rust HashMap, so its key order (and thus the file bytes)
    changes from run to run.  Same content, same length, same data offsets; only the header order is fixed."""
    save_file(tensors, path, metadata=meta)
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    md = hdr.pop("__metadata__")
    canon = {"__metadata__": dict(sorted(md.items()))}
    canon.update(hdr)
    txt = json.dumps(canon, separators=(",", ":"), ensure_ascii=False).encode()
    assert len(txt) <= n, (len(txt), n)
    with open(path, "wb") as f:
        f.write(raw[:8] + txt + b" " * (n - len(txt)) + raw[8 + n:])
    with safe_open(path, "pt") as f:   # re-read check
        assert f.metadata() == meta and sorted(f.keys()) == sorted(tensors)
        for k in tensors:
            assert torch.equal(f.get_tensor(k), tensors[k]), k


def train_steps(model_dir, adapter_dir, ids, labels, o, max_grad_norm):
    pm = load_trainable(model_dir, adapter_dir)
    named = lora_params(pm)
    params = [p for _, p in named]
    optim = torch.optim.AdamW(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                              weight_decay=o["weight_decay"], foreach=False)
    step_losses, step_norms = [], []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = pm(input_ids=ids, labels=labels).loss
        loss.backward()
        tn = torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        step_losses.append(loss.item())
        step_norms.append(tn.item())
        optim.step()
    return named, step_losses, step_norms


def check_llama3_branches(spec, model):
    rp = spec["config"]["rope_parameters"]
    hd = spec["config"].get("head_dim") or spec["config"]["hidden_size"] // spec["config"]["num_attention_heads"]
    inv = 1.0 / (rp["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    orig = rp["original_max_position_embeddings"]
    low_wl, high_wl = orig / rp["low_freq_factor"], orig / rp["high_freq_factor"]
    branches = []
    for j, f in enumerate(inv.tolist()):
        wl = 2 * math.pi / f
        if wl < high_wl:
            b = "unscaled"
        elif wl > low_wl:
            b = "scaled"
        else:
            b = "interpolated"
        branches.append(b)
        print(f"    rope j={j}: inv_freq={f:.6g} wavelen={wl:.4g} -> {b}")
    assert {"unscaled", "scaled", "interpolated"} <= set(branches), branches
    # margins: no wavelength within 10% of a boundary (so float rounding cannot flip a branch)
    for f in inv.tolist():
        wl = 2 * math.pi / f
        for bnd in (low_wl, high_wl):
            assert abs(wl - bnd) / bnd > 0.1, (wl, bnd)
    # the formula of formats.md section 2, in float64, against the model's buffer
    ref = []
    for f in inv.double().tolist():
        wl = 2 * math.pi / f
        if wl < high_wl:
            ref.append(f)
        elif wl > low_wl:
            ref.append(f / rp["factor"])
        else:
            sm = (orig / wl - rp["low_freq_factor"]) / (rp["high_freq_factor"] - rp["low_freq_factor"])
            ref.append((1 - sm) * f / rp["factor"] + sm * f)
    got = model.model.rotary_emb.inv_freq.double()
    print(f"    model inv_freq = {[float('%.6g' % x) for x in got.tolist()]}")
    assert torch.allclose(got, torch.tensor(ref, dtype=torch.float64), rtol=1e-6, atol=0), (got, ref)
    return branches


def check_yarn_regions(spec, model):
    """The fixture must cover all three YaRN regions: extrapolated (the default frequency), blended and
    interpolated (default / factor) pairs, and a cos/sin factor other than 1."""
    rp = spec["config"]["rope_parameters"]
    hd = spec["config"]["head_dim"]
    default = 1.0 / (rp["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rot = model.model.rotary_emb
    ratio = (default / rot.inv_freq).tolist()
    kinds = ["extrapolated" if abs(r - 1) < 1e-6 else "interpolated" if abs(r - rp["factor"]) < 1e-5 else "blended"
             for r in ratio]
    print(f"    yarn pairs: {kinds}, attention_scaling {rot.attention_scaling:.6f}")
    assert {"extrapolated", "blended", "interpolated"} <= set(kinds), kinds
    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
    if rp.get("mscale") and rp.get("mscale_all_dim"):   # transformers' get_mscale ratio (Ministral 3: 1)
        want = mscale(rp["factor"], rp["mscale"]) / mscale(rp["factor"], rp["mscale_all_dim"])
    else:
        want = mscale(rp["factor"])
    assert abs(rot.attention_scaling - want) < 1e-12, (rot.attention_scaling, want)
    return kinds


def write_fixture(spec, out_root):
    name = spec["name"]
    d = os.path.join(out_root, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    model_dir, adapter_dir = os.path.join(d, "model"), os.path.join(d, "adapter")
    print(f"== {name}")

    # ---- base model + adapter with non-zero lora_B ----
    base = build_base(spec)
    base.save_pretrained(model_dir, safe_serialization=True)
    torch.manual_seed(spec["seed"] + 3)        # lora_A: PEFT's kaiming-uniform init under this seed
    pm = get_peft_model(base, lora_config(spec))
    g = torch.Generator().manual_seed(spec["seed"] + 4)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
    pm.save_pretrained(adapter_dir)

    with safe_open(os.path.join(adapter_dir, "adapter_model.safetensors"), "pt") as f:
        file_keys = sorted(f.keys())
    sd_keys = sorted(get_peft_model_state_dict(pm).keys())
    param_keys = sorted(k for k, _ in lora_params(pm))
    assert file_keys == sd_keys == param_keys, (file_keys[:4], sd_keys[:4], param_keys[:4])
    assert all(k.endswith(("lora_A.weight", "lora_B.weight")) for k in file_keys)

    ids, labels = make_batch(spec)

    # ---- reference forward on the in-memory model, adapter disabled and enabled ----
    pm.train()
    with torch.no_grad():
        with pm.disable_adapter():
            base_logits = pm(input_ids=ids).logits.clone()
        mem_logits = pm(input_ids=ids).logits.clone()
    adapter_delta = (mem_logits - base_logits).abs().max().item()
    assert adapter_delta > 1e-2, f"adapter barely changes logits: {adapter_delta}"
    window = spec["config"].get("sliding_window")
    cfg = pm.base_model.model.config
    if spec["arch"] == "qwen3" and window and window < spec["T"]:
        # Qwen3: the layers that slide are config.layer_types (built from max_window_layers); both the full
        # and the sliding layers must matter: every layer full, or every layer sliding, moves later logits
        types = list(cfg.layer_types)
        assert "sliding_attention" in types and "full_attention" in types, types
        for other in ("full_attention", "sliding_attention"):
            cfg.layer_types = [other] * len(types)
            with torch.no_grad():
                other_logits = pm(input_ids=ids).logits.clone()
            cfg.layer_types = types
            assert torch.equal(other_logits[:, :window], mem_logits[:, :window])
            apart = (other_logits[:, window:] - mem_logits[:, window:]).abs().max().item()
            print(f"    layer_types {types}: all {other} moves later logits by {apart:.3g}")
            assert apart > 1e-2, apart
    elif window and window < spec["T"]:   # the window binds: the first W positions as full causal, later ones not
        # Gemma: a window as long as the sequence (its sliding layers keep their own RoPE); else none
        cfg.sliding_window = spec["T"] if spec["arch"] in ("gemma2", "gemma3_text", "olmo3") else None
        with torch.no_grad():
            causal_logits = pm(input_ids=ids).logits.clone()
        cfg.sliding_window = window
        assert torch.equal(causal_logits[:, :window], mem_logits[:, :window])
        apart = (causal_logits[:, window:] - mem_logits[:, window:]).abs().max().item()
        print(f"    sliding window {window}: full causal attention moves later logits by {apart:.3g}")
        assert apart > 1e-2, apart

    if spec["arch"] == "smollm3":   # the NoPE layers matter: rotating them too moves the logits
        attns = [mod for mod in pm.modules() if hasattr(mod, "use_rope")]
        nope = [mod for mod in attns if not mod.use_rope]
        assert nope and len(nope) < len(attns), [mod.use_rope for mod in attns]
        for mod in nope:
            mod.use_rope = 1
        with torch.no_grad():
            roped_logits = pm(input_ids=ids).logits.clone()
        for mod in nope:
            mod.use_rope = 0
        apart = (roped_logits - mem_logits).abs().max().item()
        print(f"    {len(nope)} NoPE layer(s) of {len(attns)}: with RoPE there the logits move by {apart:.3g}")
        assert apart > 1e-2, apart

    if spec["arch"] == "ministral3":   # the q factor binds from original_max_position_embeddings on, not before
        rp, n = cfg.rope_parameters, cfg.rope_parameters["original_max_position_embeddings"]
        beta = rp["llama_4_scaling_beta"]
        rp["llama_4_scaling_beta"] = 0.0
        with torch.no_grad():
            flat_logits = pm(input_ids=ids).logits.clone()
        rp["llama_4_scaling_beta"] = beta
        assert torch.equal(flat_logits[:, :n], mem_logits[:, :n])
        apart = (flat_logits[:, n:] - mem_logits[:, n:]).abs().max().item()
        print(f"    llama_4_scaling_beta {beta}: at 0 the logits from position {n} on move by {apart:.3g}")
        assert apart > 1e-2, apart

    if spec["arch"] == "granite":   # each scalar binds: setting any one to 1 moves the logits
        inner = pm.base_model.model.model
        attns = [mod for mod in pm.modules() if type(mod).__name__ == "GraniteAttention"]
        layers = [mod for mod in pm.modules() if hasattr(mod, "residual_multiplier")]
        assert attns and layers
        flips = {
            "embedding_multiplier": (lambda v: setattr(inner, "embedding_multiplier", v)),
            "attention_multiplier": (lambda v: [setattr(mod, "scaling", v) for mod in attns]),
            "residual_multiplier": (lambda v: [setattr(mod, "residual_multiplier", v) for mod in layers]),
            "logits_scaling": (lambda v: setattr(cfg, "logits_scaling", v)),
        }
        for key, put in flips.items():
            put(1.0)
            with torch.no_grad():
                flipped = pm(input_ids=ids).logits.clone()
            put(spec["config"][key])
            apart = (flipped - mem_logits).abs().max().item()
            print(f"    {key} {spec['config'][key]}: at 1.0 the logits move by {apart:.3g}")
            assert apart > 1e-2, (key, apart)
        with torch.no_grad():
            assert torch.equal(pm(input_ids=ids).logits, mem_logits)

    acap = spec["config"].get("attn_logit_softcapping")
    if acap is not None:   # the attention soft-cap binds: without it the logits move
        attns = [mod for mod in pm.modules() if hasattr(mod, "attn_logit_softcapping")]
        assert attns, "no attention module carries attn_logit_softcapping"
        for mod in attns:
            mod.attn_logit_softcapping = None
        with torch.no_grad():
            uncapped_logits = pm(input_ids=ids).logits.clone()
        for mod in attns:
            mod.attn_logit_softcapping = acap
        apart = (uncapped_logits - mem_logits).abs().max().item()
        print(f"    attn_logit_softcapping {acap}: without it the logits move by {apart:.3g}")
        assert apart > 1e-2, apart

    if spec["arch"] == "mistral3":   # the checkpoint's layout: untied head stored, vision tower beside it
        with safe_open(os.path.join(model_dir, "model.safetensors"), "pt") as f:
            stored = set(f.keys())
            head, embed = f.get_tensor("language_model.lm_head.weight"), f.get_tensor("language_model.model.embed_tokens.weight")
        assert not torch.equal(head, embed)
        vision = sorted(k for k in stored if not k.startswith("language_model."))
        assert any(k.startswith("vision_tower.") for k in vision) and any(k.startswith("multi_modal_projector.") for k in vision), vision
        print(f"    mistral3: {len(stored)} tensors, {len(vision)} outside the language model, untied head stored")

    # ---- everything below from the files on disk: proves the saved folders are the reference ----
    pm = load_trainable(model_dir, adapter_dir)
    assert [n for n, p in pm.named_parameters() if p.requires_grad] == [n for n, _ in pm.named_parameters() if "lora_" in n]
    out = pm(input_ids=ids, labels=labels)
    logits, loss = out.logits, out.loss
    assert torch.equal(logits.detach(), mem_logits), "reloaded model differs from the in-memory one"
    # independent check of the loss convention (shift inside, mean over non-ignored)
    tgt = torch.nn.functional.pad(labels, (0, 1), value=-100)[:, 1:]
    ref_loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)
    assert torch.allclose(ref_loss, loss, rtol=0, atol=1e-6), (ref_loss, loss)
    loss.backward()
    grads = {k: p.grad.detach().clone() for k, p in lora_params(pm)}
    assert sorted(grads) == file_keys

    # ---- 3 AdamW steps on a fresh copy ----
    o = spec["opt"]
    named, step_losses, step_norms = train_steps(model_dir, adapter_dir, ids, labels, o, o["max_grad_norm"])
    clipped = [n > o["max_grad_norm"] for n in step_norms]
    if spec["expect_clip"] is True:
        assert all(clipped), (step_norms, o["max_grad_norm"])
        # the clipping must visibly matter for the final adapter (Adam is nearly scale-invariant; eps makes it not)
        noclip, _, _ = train_steps(model_dir, adapter_dir, ids, labels, o, float("inf"))
        diff = max((p.detach() - q.detach()).abs().max().item() for (_, p), (_, q) in zip(named, noclip))
        print(f"    step3 max|diff| clipped vs unclipped = {diff:.3g}")
        assert diff > 1e-3, diff
    elif spec["expect_clip"] is False:
        assert not any(clipped), (step_norms, o["max_grad_norm"])
    gn0 = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads.values()))
    assert abs(gn0 - step_norms[0]) <= 1e-5 * gn0, (gn0, step_norms[0])

    branches = None
    if text_config(spec)["rope_parameters"].get("rope_type") == "llama3":
        branches = check_llama3_branches(spec, pm.base_model.model)
    if text_config(spec)["rope_parameters"].get("rope_type") == "yarn":
        branches = check_yarn_regions(spec, pm.base_model.model)
    if text_config(spec)["rope_parameters"].get("rope_type") == "dynamic":   # the forwards kept the init table
        rot = pm.base_model.model.model.rotary_emb
        assert torch.equal(rot.inv_freq, rot.original_inv_freq)
        theta = text_config(spec)["rope_parameters"]["rope_theta"]
        default = 1.0 / theta ** (torch.arange(0, rot.inv_freq.numel() * 2, 2).float() / (rot.inv_freq.numel() * 2))
        assert not torch.allclose(rot.inv_freq, default), "the fixture's factor should move the base"
        print(f"    dynamic inv_freq {[float('%.4g' % x) for x in rot.inv_freq.tolist()]}")
    if spec["arch"] == "olmo3":   # YaRN's factor on the full layers only; the sliding layers' own base
        rot = pm.base_model.model.model.rotary_emb
        assert abs(rot.full_attention_attention_scaling - (0.1 * math.log(4) + 1)) < 1e-12
        assert rot.sliding_attention_attention_scaling == 1.0
        assert not torch.allclose(rot.full_attention_inv_freq, rot.sliding_attention_inv_freq)
        print(f"    olmo3 layer_types {pm.base_model.model.config.layer_types}; full inv_freq "
              f"{[float('%.4g' % x) for x in rot.full_attention_inv_freq.tolist()]}")

    # ---- expected.safetensors ----
    lc = spec["lora"]
    tensors = {
        "input_ids": ids.to(torch.int32).contiguous(),
        "labels": labels.to(torch.int32).contiguous(),
        "logits": logits.detach().float().contiguous(),
        "loss": loss.detach().float().reshape(1).contiguous(),
        "step3.loss": torch.tensor(step_losses, dtype=torch.float32),
        "step3.grad_norm": torch.tensor(step_norms, dtype=torch.float32),
    }
    for k, g in grads.items():
        tensors["grad." + k] = g.float().contiguous()
    for k, p in named:
        tensors["step3." + k] = p.detach().float().contiguous().clone()
    scaling = lc["lora_alpha"] / (math.sqrt(lc["r"]) if lc["use_rslora"] else lc["r"])
    meta = {
        "lr": repr(o["lr"]), "beta1": repr(o["beta1"]), "beta2": repr(o["beta2"]), "eps": repr(o["eps"]),
        "weight_decay": repr(o["weight_decay"]), "max_grad_norm": repr(o["max_grad_norm"]),
        "steps": str(STEPS), "r": str(lc["r"]), "lora_alpha": str(lc["lora_alpha"]),
        "use_rslora": "true" if lc["use_rslora"] else "false",
        "target_modules": ",".join(lc["target_modules"]),
        "seed": str(spec["seed"]),
        # informative extras
        "scaling": repr(scaling),
        "clipped": ",".join("1" if c else "0" for c in clipped),
        "generator": f"tools/make_hf_fixtures.py torch {torch.__version__.split('+')[0]} "
                     f"transformers {transformers.__version__} peft {peft.__version__}",
    }
    save_file_reproducible(tensors, os.path.join(d, "expected.safetensors"), meta)

    maxlogit = logits.detach().abs().max().item()
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
    print(f"    loss={loss.item():.6f} max|logit|={maxlogit:.4f} adapter max|dlogit|={adapter_delta:.4f} "
          f"scaling={scaling:.4f}")
    print(f"    step losses={['%.6f' % x for x in step_losses]} grad norms={['%.6f' % x for x in step_norms]} "
          f"max_grad_norm={o['max_grad_norm']} clipped={clipped}")
    print(f"    {len(file_keys)} adapter tensors; folder size {size} bytes")
    return dict(name=name, loss=loss.item(), max_logit=maxlogit, clipped=clipped, grad_norms=step_norms,
                step_losses=step_losses, branches=branches, size=size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join("tests", "fixtures", "hf"))
    ap.add_argument("--only", default=None, help="comma-separated model names")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    os.makedirs(args.out, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    results = [write_fixture(s, args.out) for s in SPECS if only is None or s["name"] in only]
    print(json.dumps([{k: v for k, v in r.items()} for r in results], indent=None))


if __name__ == "__main__":
    main()
