"""Qwen3 in plain torch, for the built-in encoders (`builtin`): the module tree, parameter names,
random init and arithmetic of transformers' `Qwen3ForCausalLM` (with its default SDPA attention),
without importing transformers — that import costs ~3.5 s of CPU on every process that builds
the practice encoder (every `trinity train`, worker and analysis job on `tiny-qwen3`).

transformers stays the reference and the loader of real checkpoints (`encoder._load_hf`);
`tests/model/test_model_qwen3.py` checks that the weights are equal and the hidden states equal
bit for bit to its model's on the same inputs, padded and unpadded.

Shapes: B sequences, T tokens, H hidden, nh/nkv query/KV heads of d.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Qwen3Spec:
    """The config fields a Qwen3 decoder needs (names as in transformers' `Qwen3Config`)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int
    rope_parameters: dict[str, Any] = field(default_factory=dict)
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    hidden_act: str = "silu"
    attention_bias: bool = False
    use_sliding_window: bool = False
    initializer_range: float = 0.02

    def get_text_config(self) -> Qwen3Spec:
        return self

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class Qwen3RMSNorm(nn.Module):
    """`weight * (x / rms(x))`, statistics in fp32 (the name tells `fastpath.Norm` what it is)."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        out: torch.Tensor = self.weight * hidden_states.to(input_dtype)
        return out


class Qwen3MLP(nn.Module):
    def __init__(self, spec: Qwen3Spec) -> None:
        super().__init__()
        if spec.hidden_act != "silu":
            raise ValueError(f"built-in Qwen3 supports only the silu activation, not {spec.hidden_act!r}")
        self.gate_proj = nn.Linear(spec.hidden_size, spec.intermediate_size, bias=False)
        self.up_proj = nn.Linear(spec.hidden_size, spec.intermediate_size, bias=False)
        self.down_proj = nn.Linear(spec.intermediate_size, spec.hidden_size, bias=False)
        self.act_fn = nn.SiLU()  # the fast paths fuse it when it is SiLU (as transformers' "silu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return out


class Qwen3RotaryEmbedding(nn.Module):
    """Default RoPE: `forward(x, position_ids (1, T))` → cos, sin `(1, T, d)` in x's dtype."""

    inv_freq: torch.Tensor

    def __init__(self, spec: Qwen3Spec) -> None:
        super().__init__()
        rope = spec.rope_parameters or {"rope_type": "default", "rope_theta": 1_000_000.0}
        if rope.get("rope_type", "default") != "default":
            raise ValueError(f"built-in Qwen3 supports only default RoPE, not {rope['rope_type']!r}")
        base, dim = rope["rope_theta"], spec.head_dim
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def _repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """`(B, nkv, T, d)` → `(B, nkv * n_rep, T, d)`, each KV head repeated for its query heads."""
    b, nkv, t, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, nkv, n_rep, t, d).reshape(b, nkv * n_rep, t, d)


class Qwen3Attention(nn.Module):
    def __init__(self, spec: Qwen3Spec) -> None:
        super().__init__()
        self.head_dim = spec.head_dim
        self.num_key_value_groups = spec.num_attention_heads // spec.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        bias = spec.attention_bias
        self.q_proj = nn.Linear(spec.hidden_size, spec.num_attention_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(spec.hidden_size, spec.num_key_value_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(spec.hidden_size, spec.num_key_value_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(spec.num_attention_heads * self.head_dim, spec.hidden_size, bias=bias)
        self.q_norm = Qwen3RMSNorm(self.head_dim, eps=spec.rms_norm_eps)
        self.k_norm = Qwen3RMSNorm(self.head_dim, eps=spec.rms_norm_eps)

    def forward(
        self, x: torch.Tensor, cos_sin: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor | None
    ) -> torch.Tensor:
        shape = (*x.shape[:-1], -1, self.head_dim)  # x (B, T, H)
        q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)  # (B, nh, T, d)
        k = self.k_norm(self.k_proj(x).view(shape)).transpose(1, 2)  # (B, nkv, T, d)
        v = self.v_proj(x).view(shape).transpose(1, 2)  # (B, nkv, T, d)
        cos, sin = cos_sin[0].unsqueeze(1), cos_sin[1].unsqueeze(1)
        q = (q * cos) + (_rotate_half(q) * sin)
        k = (k * cos) + (_rotate_half(k) * sin)
        # As transformers' SDPA path does it: no mask → causal SDPA with grouped KV heads;
        # a padding mask → KV heads repeated and the boolean mask passed.
        kwargs: dict[str, Any] = {}
        if self.num_key_value_groups > 1:
            if mask is None and k.shape[-1] == v.shape[-1] <= 256:
                kwargs["enable_gqa"] = True
            else:
                k, v = _repeat_kv(k, self.num_key_value_groups), _repeat_kv(v, self.num_key_value_groups)
        q_len = q.shape[2]
        a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=0.0, scale=self.scaling, is_causal=q_len > 1 and mask is None, **kwargs
        )
        a = a.reshape(a.shape[0], -1, q_len, v.shape[-1]).transpose(1, 2).contiguous()  # (B, T, nh, d)
        out: torch.Tensor = self.o_proj(a.reshape(*x.shape[:-1], -1).contiguous())
        return out


class Qwen3DecoderLayer(nn.Module):
    def __init__(self, spec: Qwen3Spec) -> None:
        super().__init__()
        self.self_attn = Qwen3Attention(spec)
        self.mlp = Qwen3MLP(spec)
        self.input_layernorm = Qwen3RMSNorm(spec.hidden_size, eps=spec.rms_norm_eps)
        self.post_attention_layernorm = Qwen3RMSNorm(spec.hidden_size, eps=spec.rms_norm_eps)

    def forward(
        self, hidden_states: torch.Tensor, cos_sin: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor | None
    ) -> torch.Tensor:
        x = hidden_states + self.self_attn(self.input_layernorm(hidden_states), cos_sin, mask)
        out: torch.Tensor = x + self.mlp(self.post_attention_layernorm(x))
        return out


@dataclass
class DecoderOutput:
    last_hidden_state: torch.Tensor  # (B, T, H), after the final norm


def _causal_padding_mask(attention_mask: torch.Tensor | None, b: int, t: int, dev: torch.device) -> torch.Tensor | None:
    """None when no token is padding (SDPA's own causal mask), else `(B, 1, T, T)` booleans:
    key j visible to query i iff j ≤ i and j is not padding."""
    if attention_mask is None or bool(attention_mask.all()):
        return None
    pad = attention_mask.bool()  # (B, T)
    q_idx, kv_idx = torch.arange(t, device=dev), torch.arange(t, device=dev)
    causal = kv_idx[None, None, None, :] <= q_idx[None, None, :, None]  # (1, 1, T, T)
    mask = causal & pad[:, None, None, :]  # (B, 1, T, T)
    return mask.expand(b, -1, t, t)


class Qwen3Model(nn.Module):
    """The decoder: `.embed_tokens`, `.layers[i]`, `.norm`, `.rotary_emb` (the router's hooks and
    fast paths read these by name)."""

    def __init__(self, spec: Qwen3Spec) -> None:
        super().__init__()
        self.config = spec
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.hidden_size)
        self.layers = nn.ModuleList([Qwen3DecoderLayer(spec) for _ in range(spec.num_hidden_layers)])
        self.norm = Qwen3RMSNorm(spec.hidden_size, eps=spec.rms_norm_eps)
        self.rotary_emb = Qwen3RotaryEmbedding(spec)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, use_cache: bool = False
    ) -> DecoderOutput:
        x = self.embed_tokens(input_ids)  # (B, T, H)
        b, t = input_ids.shape
        position_ids = torch.arange(t, device=x.device).unsqueeze(0)  # (1, T)
        mask = _causal_padding_mask(attention_mask, b, t, x.device)
        cos_sin = self.rotary_emb(x, position_ids)
        for layer in self.layers:
            x = layer(x, cos_sin, mask)
        return DecoderOutput(last_hidden_state=self.norm(x))


class Qwen3ForCausalLM(nn.Module):
    """`.model` (the decoder, also `.base_model`) and a `.lm_head` tied to the embeddings."""

    def __init__(self, spec: Qwen3Spec) -> None:
        super().__init__()
        self.config = spec
        self.model = Qwen3Model(spec)
        _init_weights(self.model, spec.initializer_range)  # as transformers: the decoder is
        self.lm_head = nn.Linear(spec.hidden_size, spec.vocab_size, bias=False)  # set up before
        _init_weights(self.lm_head, spec.initializer_range)  # the head is built
        if spec.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @property
    def base_model(self) -> Qwen3Model:
        return self.model

    def to_transformers(self) -> Any:
        """transformers' Qwen3ForCausalLM with these weights (to save the model as a checkpoint,
        or to compare against the reference)."""
        from transformers import Qwen3Config  # lazy: transformers only when asked for
        from transformers import Qwen3ForCausalLM as HFQwen3ForCausalLM

        ref: Any = HFQwen3ForCausalLM(Qwen3Config(**self.config.to_dict()))  # its .to() is decorated: Any
        ref.load_state_dict(self.state_dict())
        weight = self.model.embed_tokens.weight
        return ref.to(dtype=weight.dtype, device=weight.device).eval()

    def save_pretrained(self, path: str | Path) -> None:
        self.to_transformers().save_pretrained(path)


@torch.no_grad()
def _init_weights(root: nn.Module, std: float) -> None:
    """transformers' init, in its order (children before parents, depth first): linear and
    embedding weights ~ N(0, std), norms 1. After the torch defaults each constructor drew, the
    same seed gives the same weights as its model."""
    for mod in _post_order(root):
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            mod.weight.normal_(mean=0.0, std=std)
            if isinstance(mod, nn.Linear) and mod.bias is not None:
                mod.bias.zero_()
        elif isinstance(mod, Qwen3RMSNorm):
            mod.weight.fill_(1.0)


def _post_order(mod: nn.Module) -> list[nn.Module]:
    out: list[nn.Module] = []
    for child in mod.children():
        out.extend(_post_order(child))
    out.append(mod)
    return out
