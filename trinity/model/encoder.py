"""The frozen encoder: a causal LM + its tokenizer (docs/CONTRACTS.md, Router model).

`load_encoder` takes a built-in name (`tiny-qwen3`, `qwen3-0.6b-random`, see `builtin`: plain
torch, no transformers import), an HF model id or a local directory (transformers). The model
is in eval mode with `requires_grad=False`; by default on CUDA in bf16 when a GPU is present,
else on the CPU in fp32.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from trinity.errors import ConfigError, ModelLoadError
from trinity.hub import hub_reachable, offline_vars_set
from trinity.model.builtin import BUILTIN_NAMES, build_builtin
from trinity.model.hftypes import HFCausalLM, HFDecoder, HFTokenizer

DEFAULT_ENCODER = "Qwen/Qwen3-0.6B"

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
}


@dataclass
class Encoder:
    """A loaded encoder. `model` is the HF causal LM (eval, frozen); `decoder` its base model
    (embeddings, `.layers`, final `.norm`, `.rotary_emb`)."""

    model: HFCausalLM
    tokenizer: HFTokenizer
    name: str
    hidden_size: int
    num_layers: int
    device: torch.device
    dtype: torch.dtype

    @property
    def decoder(self) -> HFDecoder:
        return self.model.base_model

    @property
    def eos_token_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    def token_ids(self, text: str) -> list[int]:
        """Token ids of `text` followed by EOS (no other special tokens): the encoder's input."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return [*ids, self.eos_token_id]

    def token_ids_many(self, texts: list[str]) -> list[list[int]]:
        """`token_ids` of each text, tokenised as one batch (the fast tokenizers run it in parallel)."""
        if not texts:
            return []
        eos = self.eos_token_id
        return [[*ids, eos] for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def resolve_device(device: str | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ConfigError(f"unknown device {device!r} ({e}); use cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} asked for but no CUDA GPU is available; use --device cpu")
    return dev


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return _DTYPES[str(dtype).lower()]
    except KeyError:
        raise ConfigError(f"unknown dtype {dtype!r}; use one of float32, bfloat16, float16") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _load_hf(name_or_path: str, dtype: torch.dtype) -> tuple[HFCausalLM, HFTokenizer]:
    # lazy: transformers costs ~3.5 s of CPU to import; the built-in encoders do without it
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def load(local_only: bool) -> tuple[HFCausalLM, HFTokenizer]:
        tok = AutoTokenizer.from_pretrained(name_or_path, local_files_only=local_only)
        model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=dtype, local_files_only=local_only)
        return model, tok

    is_dir = Path(os.path.expanduser(name_or_path)).is_dir()
    if not is_dir and name_or_path.startswith(("/", ".", "~")):  # a path, not a hub id: no network
        raise ModelLoadError(
            f"could not load encoder {name_or_path!r} (local path): no such directory; "
            "use --encoder tiny-qwen3 or a local path"
        )
    try:
        if is_dir:
            return load(local_only=True)
        try:
            return load(local_only=True)  # the HF cache first: no network round trips
        except (OSError, ValueError):
            if offline_vars_set() or not hub_reachable()[0]:
                # Say so now instead of after the hub client's minute of retries.
                raise OSError(
                    "the Hugging Face hub is unreachable and the model is not in the local "
                    "cache (set HF_HUB_OFFLINE=1 when working offline)"
                ) from None
            return load(local_only=False)
    except Exception as e:  # transformers raises OSError, ValueError, KeyError … for bad ids
        where = "local path" if is_dir else "offline or unknown id"
        raise ModelLoadError(
            f"could not load encoder {name_or_path!r} ({where}): {_first_line(e)}; "
            "use --encoder tiny-qwen3 or a local path"
        ) from None


def load_encoder(
    name_or_path: str, device: str | None = None, dtype: str | torch.dtype | None = None, seed: int = 0
) -> Encoder:
    """Load an encoder by built-in name, HF id or local path; `seed` only matters for built-ins.

    Raises `ModelLoadError` when the model cannot be loaded (offline, typo, no EOS token).
    """
    if not name_or_path or not str(name_or_path).strip():
        raise ModelLoadError("no encoder given; use --encoder tiny-qwen3, an HF id or a local path")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    tokenizer: HFTokenizer
    if name_or_path in BUILTIN_NAMES:
        model, tokenizer = build_builtin(name_or_path, seed=seed)
        model = model.to(dtype=dt)
    else:
        model, tokenizer = _load_hf(name_or_path, dt)
    if tokenizer.eos_token_id is None:
        raise ModelLoadError(
            f"encoder {name_or_path!r} has a tokenizer without an EOS token; the router needs one "
            "(use --encoder tiny-qwen3 or a model whose tokenizer defines eos_token)"
        )
    model = model.to(dev).eval()
    model.requires_grad_(False)
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return Encoder(
        model=model,
        tokenizer=tokenizer,
        name=name_or_path,
        hidden_size=int(config.hidden_size),
        num_layers=int(config.num_hidden_layers),
        device=dev,
        dtype=dt,
    )
