"""Encoders that need no download: a random-init Qwen3 built from a config + a BPE tokenizer
shipped with the package (`tiny_tokenizer.json`: byte-level BPE, Qwen2's pre-tokenizer split,
8,192 tokens + EOS, trained once by `scripts/build_tiny_tokenizer.py`). Deterministic from a seed.

The tokenizer matters for speed, not only realism: at ~2.7 characters a token on session
transcripts (Qwen's gives ~4 on English; a byte-level one gives 1) the tiny encoder reads texts
of the token lengths the real one would, so attention cost is not inflated ~7x.

- `tiny-qwen3`: hidden 64, 4 layers, 8 heads / 4 KV heads of 16 (GQA like the real model), MLP 192.
  Every SVF matrix has min(out, in) = hidden, so the SVF has 7 × hidden scales as in Qwen3-0.6B.
  The test and practice encoder.
- `qwen3-0.6b-random`: the real Qwen3-0.6B dimensions (hidden 1024, 28 layers, 16/8 heads of 128,
  MLP 3072, vocab 151936, tied embeddings), random weights. For benchmarks: same FLOPs, no download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from trinity.model.qwen3 import Qwen3ForCausalLM, Qwen3Spec

EOS_TOKEN = "<|endoftext|>"
TOKENIZER_FILE = Path(__file__).with_name("tiny_tokenizer.json")

_COMMON: dict[str, Any] = dict(
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    hidden_act="silu",
    attention_bias=False,
    use_sliding_window=False,
    initializer_range=0.02,
)

CONFIGS: dict[str, dict[str, Any]] = {
    "tiny-qwen3": dict(
        vocab_size=8256,  # 8,192 BPE tokens + EOS, rounded up to a multiple of 64
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=16,
        max_position_embeddings=40960,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
    ),
    "qwen3-0.6b-random": dict(
        vocab_size=151936,
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
    ),
}

BUILTIN_NAMES = tuple(CONFIGS)


class BpeTokenizer:
    """The shipped BPE tokenizer (ids 0..8191) with EOS `<|endoftext|>` (id 8192), also the pad
    token, called as transformers' tokenizers are (`tok(text or texts, add_special_tokens=False)
    ["input_ids"]`) and giving the same ids as its `PreTrainedTokenizerFast` on the same file
    (`to_transformers()`, tests) without importing transformers."""

    eos_token = pad_token = EOS_TOKEN

    def __init__(self, tok: Tokenizer) -> None:
        self.backend = tok
        eos = tok.token_to_id(EOS_TOKEN)
        if eos is None:
            raise ValueError(f"{TOKENIZER_FILE.name} has no {EOS_TOKEN} token")
        self.eos_token_id = self.pad_token_id = int(eos)

    def __call__(self, text: str | list[str], add_special_tokens: bool = False) -> dict[str, Any]:
        if isinstance(text, str):
            return {"input_ids": self.backend.encode(text, add_special_tokens=add_special_tokens).ids}
        encs = self.backend.encode_batch(list(text), add_special_tokens=add_special_tokens)
        return {"input_ids": [e.ids for e in encs]}

    def to_transformers(self) -> Any:
        """The same tokenizer as transformers' `PreTrainedTokenizerFast` (to save it, or to
        compare against it)."""
        from transformers import PreTrainedTokenizerFast  # lazy: transformers only when asked for

        return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # the library's untyped __init__
            tokenizer_object=self.backend, eos_token=EOS_TOKEN, pad_token=EOS_TOKEN
        )

    def save_pretrained(self, path: str | Path) -> Any:
        return self.to_transformers().save_pretrained(path)


def bpe_tokenizer() -> BpeTokenizer:
    """The shipped tokenizer, loaded from the package: deterministic, no download."""
    return BpeTokenizer(Tokenizer.from_file(str(TOKENIZER_FILE)))


def builtin_spec(name: str) -> Qwen3Spec:
    return Qwen3Spec(**CONFIGS[name], **_COMMON)


def build_builtin(name: str, seed: int = 0) -> tuple[Qwen3ForCausalLM, BpeTokenizer]:
    """Random-init model + tokenizer for a built-in name; the same seed gives the same weights
    in any process, and the weights transformers' Qwen3ForCausalLM gets from that seed. Built in
    fp32 on the CPU (the caller moves and casts it)."""
    spec = builtin_spec(name)
    # fork_rng: seed the init without disturbing the caller's global torch RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(spec)
    return model, bpe_tokenizer()
