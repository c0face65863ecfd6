"""Batched evaluation of many SVF candidates from cached SVF-layer inputs (the hot path:
`Router.population_logits`, docs/CONTRACTS.md, Router model).

Input: for each transcript, the input of the SVF layer L (= num_layers - 2) at positions
0..n-1, where n-1 is "position -2" of the tokenised text (the EOS at -1 is dropped: attention is
causal, so the EOS never influences earlier positions).

Work is done on grids of P candidates × B texts (S packed token rows, longest T tokens):
- layer L, all positions, factored SVF: `x Wᵀ = ((x V) ⊙ (s ⊙ z)) Uᵀ`; `x V` of q/k/v is computed
  once per transcript and shared by its candidates, no weight matrix is built per candidate;
- layer L+1 (the last): K and V at all positions, but Q, attention output, o_proj and the MLP
  only at position -2; then the final norm and L2 normalisation.

Token rows are packed (no padding) for the matmuls and gathered into a right-padded
`(P*B, heads, T, head_dim)` layout only for attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from trinity.model.hftypes import HFDecoder, HFLayer
from trinity.model.svf import SvfLayer

# SDPA repeats KV heads itself (no expanded copies) from torch 2.5 on.
_SDPA_GQA = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x `(..., S, heads, d)`, cos/sin `(S, d)` → `x * cos + rotate_half(x) * sin` (HF's
    apply_rotary_pos_emb), written as two in-place half updates to save passes over x."""
    cos, sin = cos[:, None, :], sin[:, None, :]
    half = x.shape[-1] // 2
    out = x * cos
    out[..., :half].addcmul_(x[..., half:], sin[..., :half], value=-1)
    out[..., half:].addcmul_(x[..., :half], sin[..., half:])
    return out


class Norm:
    """A norm module split as `weight ⊙ unit(x)` so the weight can be folded into the matrix
    (or rotary table) that follows. Recognises HF's Qwen3/Llama RMSNorm (`weight *
    (x / rms(x)).to(dtype)`, statistics in fp32); any other norm is called as it is, weight 1."""

    def __init__(self, mod: torch.nn.Module):
        self.mod = mod
        eps, weight = getattr(mod, "variance_epsilon", None), getattr(mod, "weight", None)
        self.rms = eps is not None and weight is not None and "RMSNorm" in type(mod).__name__
        self.eps = float(eps) if self.rms and eps is not None else 0.0
        self.weight: torch.Tensor | None = weight.detach() if self.rms and weight is not None else None

    def unit(self, x: torch.Tensor) -> torch.Tensor:
        if not self.rms:
            out: torch.Tensor = self.mod(x)
            return out
        xf = x.float()
        # One reduction pass + one scaling pass (vs pow, mean, add, rsqrt, mul).
        inv = torch.linalg.vector_norm(xf, dim=-1, keepdim=True).square_().div_(x.shape[-1]).add_(self.eps).rsqrt_()
        return xf.mul(inv).to(x.dtype)

    def fold_in(self, matrix: torch.Tensor, dim: int) -> torch.Tensor:
        """`matrix` scaled by the norm weight along its input dimension `dim`."""
        if self.weight is None:
            return matrix
        shape = [1] * matrix.dim()
        shape[dim] = -1
        return matrix * self.weight.to(matrix.dtype).view(shape)

    def fold_rope(self, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """rope(w ⊙ x) = x ⊙ (w ⊙ cos) + rotate_half(x) ⊙ (swap(w) ⊙ sin), swap = half exchange."""
        if self.weight is None:
            return cos, sin
        w = self.weight.to(cos.dtype)
        half = w.shape[-1] // 2
        return cos * w, sin * torch.cat([w[half:], w[:half]])


def linear(x: torch.Tensor, mod: torch.nn.Linear) -> torch.Tensor:
    return F.linear(x, mod.weight, mod.bias)


def add_bias(y: torch.Tensor, mod: torch.nn.Linear) -> torch.Tensor:
    return y if mod.bias is None else y + mod.bias


@dataclass
class TextPlan:
    """Index plan for B texts packed into S rows (text after text, no padding).

    pos (S,): position of each row in its text
    pad_index (B, T): packed row of (text, position); padding slots repeat the text's last row
        (never read: causal attention hides them from real queries, or a mask does)
    flat_of_row (S,): index of each row in the flattened padded (B*T) layout
    last_row (B,): row of each text's last token (position -2 of the tokenised text)
    lengths (B,): tokens per text
    """

    pos: torch.Tensor
    pad_index: torch.Tensor
    flat_of_row: torch.Tensor
    last_row: torch.Tensor
    lengths: torch.Tensor

    @property
    def T(self) -> int:
        return int(self.pad_index.shape[1])

    @property
    def S(self) -> int:
        return int(self.pos.shape[0])


def plan_texts(lengths: list[int], device: torch.device) -> TextPlan:
    """The plan for texts of `lengths` tokens, packed in this order."""
    B, T, S = len(lengths), max(lengths), sum(lengths)
    pos = torch.cat([torch.arange(n) for n in lengths])
    flat = torch.cat([b * T + torch.arange(n) for b, n in enumerate(lengths)])
    lengths_t = torch.tensor(lengths)
    last_row = torch.cumsum(lengths_t, 0) - 1
    pad_index = last_row.repeat_interleave(T)
    pad_index[flat] = torch.arange(S)
    return TextPlan(
        pos=pos.to(device),
        pad_index=pad_index.view(B, T).to(device),
        flat_of_row=flat.to(device),
        last_row=last_row.to(device),
        lengths=lengths_t.to(device),
    )


class FastLayers:
    """Layers L (with SVF) and L+1 of the encoder, prepared for batched candidate evaluation.

    Work is done on grids: P candidates × the S packed token rows of a set of texts; activations
    are `(P, S, features)`, the per-candidate scales broadcast over S (no per-row gathers).
    RMSNorm weights are folded once into the frozen matrices (and rotary tables) that follow them.
    """

    def __init__(self, decoder: HFDecoder, svf: SvfLayer, dtype: torch.dtype):
        self.decoder = decoder
        self.svf = svf
        L = svf.index
        self.layer: HFLayer = decoder.layers[L]
        self.last: HFLayer = decoder.layers[L + 1]
        attn, last_attn = self.layer.self_attn, self.last.self_attn
        self.head_dim = int(attn.head_dim)
        self.n_heads = attn.q_proj.out_features // self.head_dim
        self.n_kv = attn.k_proj.out_features // self.head_dim
        self.scaling = float(getattr(attn, "scaling", self.head_dim**-0.5))
        self.f = {fac.name: fac for fac in svf.factors}

        def cast(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype).contiguous()

        self.ln1, self.ln2 = Norm(self.layer.input_layernorm), Norm(self.layer.post_attention_layernorm)
        self.last_ln1 = Norm(self.last.input_layernorm)
        has_qk_norm = hasattr(attn, "q_norm")
        self.qk_norms = (Norm(attn.q_norm), Norm(attn.k_norm)) if has_qk_norm else None
        self.last_qk_norms = (Norm(last_attn.q_norm), Norm(last_attn.k_norm)) if has_qk_norm else None
        V = {n: fac.Vh.T for n, fac in self.f.items()}  # (in, r), float32
        # x V for q, k, v in one matmul: V_qkv (hidden, r_q + r_k + r_v), shared by all candidates.
        self.V_qkv = cast(self.ln1.fold_in(torch.cat([V[n] for n in ("q_proj", "k_proj", "v_proj")], dim=1), 0))
        self.V_o, self.V_d = cast(V["o_proj"]), cast(V["down_proj"])
        self.V_g, self.V_u = cast(self.ln2.fold_in(V["gate_proj"], 0)), cast(self.ln2.fold_in(V["up_proj"], 0))
        self.Ut = {n: cast(fac.U.T) for n, fac in self.f.items()}  # (r, out)
        self.s = torch.cat([fac.s for fac in svf.factors])  # (svf_size,) float32
        # Layer L+1's q/k/v weights (out, in) with its input norm's weight folded in.
        self.W_last = {
            n: cast(self.last_ln1.fold_in(getattr(last_attn, n).weight.detach(), 1))
            for n in ("q_proj", "k_proj", "v_proj")
        }
        self.dtype = dtype

    def _rope(self, pos: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.decoder.rotary_emb(like, pos[None, :])  # (1, S, d) each
        return cos[0], sin[0]

    @staticmethod
    def _norm_rope(
        q: torch.Tensor,
        k: torch.Tensor,
        norms: tuple[Norm, Norm] | None,
        cos_q: torch.Tensor,
        sin_q: torch.Tensor,
        cos_k: torch.Tensor,
        sin_k: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head q/k norm (weight folded into the rotary tables), then rotary embedding."""
        if norms is None:
            return apply_rope(q, cos_q, sin_q), apply_rope(k, cos_k, sin_k)
        nq, nk = norms
        q = apply_rope(nq.unit(q), *nq.fold_rope(cos_q, sin_q))
        k = apply_rope(nk.unit(k), *nk.fold_rope(cos_k, sin_k))
        return q, k

    def _attention(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        is_causal: bool = False,
    ) -> torch.Tensor:
        """SDPA with grouped-query attention: q `(N, n_heads, Tq, d)`, k/v `(N, n_kv, T, d)`."""
        g = self.n_heads // self.n_kv
        if g > 1 and _SDPA_GQA:
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=self.scaling, enable_gqa=True
            )
        if g > 1:  # each KV head repeated for its query group (HF's repeat_kv order)
            N, nkv, T, d = k.shape
            k, v = (t[:, :, None].expand(N, nkv, g, T, d).reshape(N, nkv * g, T, d) for t in (k, v))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=self.scaling)

    def _pad(self, rows: torch.Tensor, plan: TextPlan) -> torch.Tensor:
        """Packed `(P, S, heads, d)` → right-padded `(P*B, heads, T, d)`."""
        return rows[:, plan.pad_index].flatten(0, 1).transpose(1, 2)  # (P, B, T, heads, d) → …

    @torch.inference_mode()
    def shared(self, x_text: torch.Tensor) -> list[torch.Tensor]:
        """The candidate-independent part: `x V` of q, k, v for packed texts `(S, hidden)` →
        `[(S, r_q), (S, r_k), (S, r_v)]`."""
        xv = self.ln1.unit(x_text) @ self.V_qkv
        ranks = [self.f[n].rank for n in ("q_proj", "k_proj", "v_proj")]
        return [t.contiguous() for t in torch.split(xv, ranks, dim=1)]

    @torch.inference_mode()
    def features(
        self, x_text: torch.Tensor, xv: list[torch.Tensor], plan: TextPlan, scales: torch.Tensor
    ) -> torch.Tensor:
        """x_text `(S, hidden)` packed SVF-layer inputs of B texts, `xv` = `shared(x_text)`,
        `scales` `(P, svf_size)` SVF z of P candidates → features `(P, B, hidden)` float32, L2-normed."""
        mlp = self.layer.mlp
        f, d, nh, nkv = self.f, self.head_dim, self.n_heads, self.n_kv
        P, S = int(scales.shape[0]), plan.S
        # s ⊙ z in fp32, then the model dtype (z's small ES steps survive a bf16 model).
        sz = [t[:, None, :] for t in self.svf.split((scales.float() * self.s).to(self.dtype))]  # (P, 1, r)
        sz_q, sz_k, sz_v, sz_o, sz_g, sz_u, sz_d = sz

        # --- layer L attention, factored SVF: ((x V) ⊙ (s ⊙ z)) Uᵀ ---
        q = add_bias((xv[0] * sz_q) @ self.Ut["q_proj"], f["q_proj"].module).view(P, S, nh, d)
        k = add_bias((xv[1] * sz_k) @ self.Ut["k_proj"], f["k_proj"].module).view(P, S, nkv, d)
        v = add_bias((xv[2] * sz_v) @ self.Ut["v_proj"], f["v_proj"].module).view(P, S, nkv, d)
        cos, sin = self._rope(plan.pos, q)
        q, k = self._norm_rope(q, k, self.qk_norms, cos, sin, cos, sin)
        # Right padding + causal mask: a real query only sees real keys, so no padding mask.
        out = self._attention(self._pad(q, plan), self._pad(k, plan), self._pad(v, plan), is_causal=True)
        # out: (P*B, nh, T, d)
        del q, k, v
        a = out.transpose(1, 2).reshape(P, -1, nh * d)[:, plan.flat_of_row]  # (P, S, nh*d)
        del out
        o = (a @ self.V_o).mul_(sz_o)
        h = add_bias(o @ self.Ut["o_proj"], f["o_proj"].module).add_(x_text)  # (P, S, hidden)
        del a, o

        # --- layer L MLP, factored SVF ---
        x2 = self.ln2.unit(h)  # the norm weight is folded into V_g, V_u
        gate = add_bias((x2 @ self.V_g).mul_(sz_g) @ self.Ut["gate_proj"], f["gate_proj"].module)
        up = add_bias((x2 @ self.V_u).mul_(sz_u) @ self.Ut["up_proj"], f["up_proj"].module)
        del x2
        if isinstance(mlp.act_fn, torch.nn.SiLU):
            m = F.silu(gate, inplace=True).mul_(up)  # (P, S, intermediate)
        else:
            m = mlp.act_fn(gate).mul_(up)
        del gate, up
        h = h.add_(add_bias((m @ self.V_d).mul_(sz_d) @ self.Ut["down_proj"], f["down_proj"].module))
        del m
        return self._last_layer(h, plan)

    def _last_layer(self, h: torch.Tensor, plan: TextPlan) -> torch.Tensor:
        """Layer L+1 at position -2 only (K/V at every position), final norm, L2 norm.
        h `(P, S, hidden)` → `(P, B, hidden)`."""
        layer, attn, d, nh, nkv = self.last, self.last.self_attn, self.head_dim, self.n_heads, self.n_kv
        P, S, B = int(h.shape[0]), plan.S, int(plan.last_row.shape[0])
        x = self.last_ln1.unit(h)  # the norm weight is folded into W_last
        k = F.linear(x, self.W_last["k_proj"], attn.k_proj.bias).view(P, S, nkv, d)
        v = F.linear(x, self.W_last["v_proj"], attn.v_proj.bias).view(P, S, nkv, d)
        q = F.linear(x[:, plan.last_row], self.W_last["q_proj"], attn.q_proj.bias).view(P, B, nh, d)
        del x
        cos, sin = self._rope(plan.pos, k)
        q, k = self._norm_rope(q, k, self.last_qk_norms, cos[plan.last_row], sin[plan.last_row], cos, sin)
        keep = torch.arange(plan.T, device=h.device)[None, :] < plan.lengths[:, None]  # (B, T)
        out = self._attention(
            q.reshape(P * B, nh, 1, d),
            self._pad(k, plan),
            self._pad(v, plan),
            attn_mask=keep.repeat(P, 1)[:, None, None, :],
        )  # (P*B, nh, 1, d)
        y = h[:, plan.last_row] + linear(out.reshape(P, B, nh * d), attn.o_proj)
        y = y + layer.mlp(layer.post_attention_layernorm(y))
        y = self.decoder.norm(y)
        return F.normalize(y.float(), dim=-1)

    def flops(self, lengths: list[int], n_candidates: int, shared: bool = True) -> int:
        """Useful floating-point operations of `features` (+ `shared` if asked) for texts of
        `lengths` tokens and `n_candidates` candidates (matmuls + attention)."""
        f, d, nh, nkv = self.f, self.head_dim, self.n_heads, self.n_kv
        H = self.V_qkv.shape[0]
        P, S, B = n_candidates, sum(lengths), len(lengths)
        rank = {n: fac.rank for n, fac in f.items()}
        out = {n: fac.module.out_features for n, fac in f.items()}
        inn = {n: fac.module.in_features for n, fac in f.items()}
        per_row = sum(rank[n] * out[n] for n in ("q_proj", "k_proj", "v_proj"))
        per_row += sum(inn[n] * rank[n] + rank[n] * out[n] for n in ("o_proj", "gate_proj", "up_proj", "down_proj"))
        per_row += H * 2 * nkv * d  # layer L+1: K and V at every position
        per_text = H * nh * d * 2 + 3 * H * out["gate_proj"]  # layer L+1 at -2: q, o, gate, up, down
        attn = sum(n * (n + 1) // 2 for n in lengths) * nh * d * 2 + S * nh * d * 2
        total = 2 * P * (S * per_row + B * per_text + attn)
        if shared:
            total += 2 * S * H * self.V_qkv.shape[1]
        return int(total)
