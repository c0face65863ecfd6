"""SVF on one decoder layer (docs/CONTRACTS.md, Router model): each of its 7 linear maps `W = U diag(s) Vᵀ` becomes
`U diag(s ⊙ z) Vᵀ`, `z` the trainable scales (1.0 = the original model).

The SVD is computed once, in float64, when a `SvfLayer` is built. `SvfLayer.applied(svf)` is the
naive path: it writes the rebuilt weights into the model (and restores them after), so a plain
full forward runs the scaled model — the reference the fast path is tested against.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from trinity.errors import ModelLoadError
from trinity.layout import SVF_MATRICES as SVF_MATRICES  # θ order: attention q, k, v, o, then MLP gate, up, down
from trinity.model.arrays import FloatArray
from trinity.model.hftypes import HFDecoder


@dataclass
class SvfFactor:
    """One matrix `W (out, in) = U diag(s) Vh`, `U (out, r)`, `s (r,)`, `Vh (r, in)`, r = min(out, in);
    float32 on the model's device. `offset` is where its `r` scales start in the SVF vector."""

    name: str
    module: torch.nn.Linear
    U: torch.Tensor
    s: torch.Tensor
    Vh: torch.Tensor
    offset: int

    @property
    def rank(self) -> int:
        return int(self.s.shape[0])

    def weight(self, z: torch.Tensor) -> torch.Tensor:
        """`U diag(s ⊙ z) Vh` `(out, in)` in float32, `z (r,)`."""
        return (self.U * (self.s * z)) @ self.Vh


def layer_modules(decoder: HFDecoder, index: int) -> dict[str, torch.nn.Linear]:
    """The 7 SVF linear maps of decoder layer `index` (Qwen3 / Llama-style layout)."""
    layer = decoder.layers[index]
    attn, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
    found: dict[str, torch.nn.Linear] = {}
    for name in SVF_MATRICES:
        mod = getattr(attn if name.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else mlp, name, None)
        if not isinstance(mod, torch.nn.Linear):
            raise ModelLoadError(
                f"decoder layer {index} has no linear {name}; the router needs a Qwen3/Llama-style "
                "causal LM (self_attn.q/k/v/o_proj, mlp.gate/up/down_proj); use --encoder tiny-qwen3"
            )
        found[name] = mod
    return found


class SvfLayer:
    """The SVD factors of the 7 matrices of decoder layer `index`; `size` scales in all."""

    def __init__(self, decoder: HFDecoder, index: int):
        self.index = index
        self.factors: list[SvfFactor] = []
        offset = 0
        for name, mod in layer_modules(decoder, index).items():
            w = mod.weight.detach().to(torch.float64)
            # full_matrices=False: U (out, r), s (r,), Vh (r, in) with r = min(out, in).
            U, s, Vh = torch.linalg.svd(w, full_matrices=False)
            dev = mod.weight.device
            self.factors.append(SvfFactor(name, mod, U.float().to(dev), s.float().to(dev), Vh.float().to(dev), offset))
            offset += int(s.shape[0])
        self.size = offset

    def split(self, svf: torch.Tensor) -> list[torch.Tensor]:
        """SVF vector `(..., size)` → one `(..., r)` slice per matrix, θ order."""
        return [svf[..., f.offset : f.offset + f.rank] for f in self.factors]

    @contextmanager
    def applied(self, svf: FloatArray) -> Iterator[None]:
        """Write `U diag(s ⊙ z) Vᵀ` into the model's weights for the duration of the block."""
        z_all = torch.as_tensor(np.asarray(svf, dtype=np.float32), device=self.factors[0].s.device)
        saved: list[tuple[torch.nn.Linear, torch.Tensor]] = []
        try:
            with torch.no_grad():
                for f, z in zip(self.factors, self.split(z_all)):
                    saved.append((f.module, f.module.weight.data))
                    f.module.weight.data = f.weight(z).to(f.module.weight.dtype)
            yield
        finally:
            for mod, original in saved:
                mod.weight.data = original
