"""Names for the transformers objects the router holds (the built-in encoders' plain-torch
`qwen3` modules have the same attribute names).

transformers builds a model's submodules (`.layers`, `.self_attn`, `.q_proj`, `.rotary_emb` …)
as attributes of `torch.nn.Module`, whose type for any attribute is `Tensor | Module`, and its
`from_pretrained` loaders return `Any`. So these stay `Any` to the type checker, under a name that
says what the value is; everything computed from them is typed (`torch.Tensor`, numpy arrays).
"""

from __future__ import annotations

from typing import Any

HFCausalLM = Any  # a causal LM (e.g. Qwen3ForCausalLM): .base_model, .config, .to(), .eval()
HFDecoder = Any  # its base model: .embed_tokens, .layers[i] (.self_attn, .mlp, norms), .norm, .rotary_emb
HFLayer = Any  # one decoder layer of it
HFTokenizer = Any  # transformers' tokenizer or the built-in `BpeTokenizer`: tok(text, add_special_tokens=False)["input_ids"], .eos_token_id

__all__ = ["HFCausalLM", "HFDecoder", "HFLayer", "HFTokenizer"]
