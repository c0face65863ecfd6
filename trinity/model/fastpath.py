"""Batched evaluation of many SVF candidates from cached SVF-layer inputs (DESIGN §3, hot path).

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


def rms_norm(mod: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """HF's Qwen3/Llama RMSNorm (`weight * (x / rms(x)).to(dtype)`, statistics in fp32) with
    torch's fused kernel; other norm modules are called as they are."""
    eps, weight = getattr(mod, "variance_epsilon", None), getattr(mod, "weight", None)
    if eps is None or weight is None or "RMSNorm" not in type(mod).__name__:
        return mod(x)
    y = F.rms_norm(x if x.dtype == torch.float32 else x.float(), (x.shape[-1],), eps=eps)
    return weight * y.to(x.dtype)


def _linear(x: torch.Tensor, mod: torch.nn.Linear) -> torch.Tensor:
    return F.linear(x, mod.weight, mod.bias)


def _bias(y: torch.Tensor, mod: torch.nn.Linear) -> torch.Tensor:
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
        pos=pos.to(device), pad_index=pad_index.view(B, T).to(device), flat_of_row=flat.to(device),
        last_row=last_row.to(device), lengths=lengths_t.to(device),
    )


class FastLayers:
    """Layers L (with SVF) and L+1 of the encoder, prepared for batched candidate evaluation.

    Work is done on grids: P candidates × the S packed token rows of a set of texts; activations
    are `(P, S, features)`, the per-candidate scales broadcast over S (no per-row gathers).
    """

    def __init__(self, decoder, svf: SvfLayer, dtype: torch.dtype):
        self.decoder = decoder
        self.svf = svf
        L = svf.index
        self.layer, self.last = decoder.layers[L], decoder.layers[L + 1]
        attn = self.layer.self_attn
        self.head_dim = int(attn.head_dim)
        self.n_heads = attn.q_proj.out_features // self.head_dim
        self.n_kv = attn.k_proj.out_features // self.head_dim
        self.scaling = float(getattr(attn, "scaling", self.head_dim**-0.5))
        self.f = {fac.name: fac for fac in svf.factors}
        cast = lambda t: t.to(dtype).contiguous()  # noqa: E731
        # x V for q, k, v in one matmul: V_qkv (hidden, r_q + r_k + r_v), shared by all candidates.
        self.V_qkv = cast(torch.cat([self.f[n].Vh.T for n in ("q_proj", "k_proj", "v_proj")], dim=1))
        self.V = {n: cast(fac.Vh.T) for n, fac in self.f.items()}  # (in, r)
        self.Ut = {n: cast(fac.U.T) for n, fac in self.f.items()}  # (r, out)
        self.s = torch.cat([fac.s for fac in svf.factors]).to(dtype)  # (svf_size,)
        self.dtype = dtype

    def _rope(self, pos: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.decoder.rotary_emb(like, pos[None, :])  # (1, S, d) each
        return cos[0], sin[0]

    def _attention(self, q, k, v, **kw) -> torch.Tensor:
        """SDPA with grouped-query attention: q `(N, n_heads, Tq, d)`, k/v `(N, n_kv, T, d)`."""
        g = self.n_heads // self.n_kv
        if g > 1 and _SDPA_GQA:
            return F.scaled_dot_product_attention(q, k, v, scale=self.scaling, enable_gqa=True, **kw)
        if g > 1:  # each KV head repeated for its query group (HF's repeat_kv order)
            N, nkv, T, d = k.shape
            k, v = (t[:, :, None].expand(N, nkv, g, T, d).reshape(N, nkv * g, T, d) for t in (k, v))
        return F.scaled_dot_product_attention(q, k, v, scale=self.scaling, **kw)

    def _pad(self, rows: torch.Tensor, plan: TextPlan) -> torch.Tensor:
        """Packed `(P, S, heads, d)` → right-padded `(P*B, heads, T, d)`."""
        return rows[:, plan.pad_index].flatten(0, 1).transpose(1, 2)  # (P, B, T, heads, d) → …

    @torch.inference_mode()
    def shared(self, x_text: torch.Tensor) -> list[torch.Tensor]:
        """The candidate-independent part: `x V` of q, k, v for packed texts `(S, hidden)` →
        `[(S, r_q), (S, r_k), (S, r_v)]`."""
        xv = rms_norm(self.layer.input_layernorm, x_text) @ self.V_qkv
        ranks = [self.f[n].rank for n in ("q_proj", "k_proj", "v_proj")]
        return [t.contiguous() for t in torch.split(xv, ranks, dim=1)]

    @torch.inference_mode()
    def features(
        self, x_text: torch.Tensor, xv: list[torch.Tensor], plan: TextPlan, scales: torch.Tensor
    ) -> torch.Tensor:
        """x_text `(S, hidden)` packed SVF-layer inputs of B texts, `xv` = `shared(x_text)`,
        `scales` `(P, svf_size)` SVF z of P candidates → features `(P, B, hidden)` float32, L2-normed."""
        layer, attn, mlp = self.layer, self.layer.self_attn, self.layer.mlp
        f, d, nh, nkv = self.f, self.head_dim, self.n_heads, self.n_kv
        P, S = int(scales.shape[0]), plan.S
        sz = [t[:, None, :] for t in self.svf.split(scales.to(self.dtype) * self.s)]  # (P, 1, r) each
        sz_q, sz_k, sz_v, sz_o, sz_g, sz_u, sz_d = sz

        # --- layer L attention, factored SVF: ((x V) ⊙ (s ⊙ z)) Uᵀ ---
        q = _bias((xv[0] * sz_q) @ self.Ut["q_proj"], f["q_proj"].module).view(P, S, nh, d)
        k = _bias((xv[1] * sz_k) @ self.Ut["k_proj"], f["k_proj"].module).view(P, S, nkv, d)
        v = _bias((xv[2] * sz_v) @ self.Ut["v_proj"], f["v_proj"].module).view(P, S, nkv, d)
        if hasattr(attn, "q_norm"):
            q, k = rms_norm(attn.q_norm, q), rms_norm(attn.k_norm, k)
        cos, sin = self._rope(plan.pos, q)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # Right padding + causal mask: a real query only sees real keys, so no padding mask.
        out = self._attention(self._pad(q, plan), self._pad(k, plan), self._pad(v, plan), is_causal=True)
        # out: (P*B, nh, T, d)
        del q, k, v
        a = out.transpose(1, 2).reshape(P, -1, nh * d)[:, plan.flat_of_row]  # (P, S, nh*d)
        del out
        o = (a @ self.V["o_proj"]).mul_(sz_o)
        h = _bias(o @ self.Ut["o_proj"], f["o_proj"].module).add_(x_text)  # (P, S, hidden)
        del a, o

        # --- layer L MLP, factored SVF ---
        x2 = rms_norm(layer.post_attention_layernorm, h)
        gate = _bias((x2 @ self.V["gate_proj"]).mul_(sz_g) @ self.Ut["gate_proj"], f["gate_proj"].module)
        up = _bias((x2 @ self.V["up_proj"]).mul_(sz_u) @ self.Ut["up_proj"], f["up_proj"].module)
        del x2
        if isinstance(mlp.act_fn, torch.nn.SiLU):
            m = F.silu(gate, inplace=True).mul_(up)  # (P, S, intermediate)
        else:
            m = mlp.act_fn(gate).mul_(up)
        del gate, up
        h = h.add_(_bias((m @ self.V["down_proj"]).mul_(sz_d) @ self.Ut["down_proj"], f["down_proj"].module))
        del m
        return self._last_layer(h, plan)

    def _last_layer(self, h: torch.Tensor, plan: TextPlan) -> torch.Tensor:
        """Layer L+1 at position -2 only (K/V at every position), final norm, L2 norm.
        h `(P, S, hidden)` → `(P, B, hidden)`."""
        layer, attn, d, nh, nkv = self.last, self.last.self_attn, self.head_dim, self.n_heads, self.n_kv
        P, S, B = int(h.shape[0]), plan.S, int(plan.last_row.shape[0])
        x = rms_norm(layer.input_layernorm, h)
        k = _linear(x, attn.k_proj).view(P, S, nkv, d)
        v = _linear(x, attn.v_proj).view(P, S, nkv, d)
        q = _linear(x[:, plan.last_row], attn.q_proj).view(P, B, nh, d)
        del x
        if hasattr(attn, "q_norm"):
            q, k = rms_norm(attn.q_norm, q), rms_norm(attn.k_norm, k)
        cos, sin = self._rope(plan.pos, k)
        k = apply_rope(k, cos, sin)
        q = apply_rope(q, cos[plan.last_row], sin[plan.last_row])
        keep = torch.arange(plan.T, device=h.device)[None, :] < plan.lengths[:, None]  # (B, T)
        out = self._attention(
            q.reshape(P * B, nh, 1, d), self._pad(k, plan), self._pad(v, plan),
            attn_mask=keep.repeat(P, 1)[:, None, None, :],
        )  # (P*B, nh, 1, d)
        y = h[:, plan.last_row] + _linear(out.reshape(P, B, nh * d), attn.o_proj)
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
