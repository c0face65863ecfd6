"""Batched evaluation of many SVF candidates from cached SVF-layer inputs (DESIGN §3, hot path).

Input: for each transcript, the input of the SVF layer L (= num_layers - 2) at positions
0..n-1, where n-1 is "position -2" of the tokenised text (the EOS at -1 is dropped: attention is
causal, so the EOS never influences earlier positions). A *pair* is (transcript, candidate): the
population is every pair, the live trainer's paired mode one pair per transcript.

Per chunk of pairs (R token rows in all, B pairs, longest T tokens):
- layer L, all positions, factored SVF: `x Wᵀ = ((x V) ⊙ (s ⊙ z)) Uᵀ`; `x V` of q/k/v is computed
  once per transcript and shared by its candidates, no weight matrix is built per candidate;
- layer L+1 (the last): K and V at all positions, but Q, attention output, o_proj and the MLP
  only at position -2; then the final norm and L2 normalisation.

Token rows are packed (no padding) for the matmuls and gathered into a right-padded
`(B, heads, T, head_dim)` layout only for attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from trinity.model.svf import SvfLayer


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x `(R, heads, d)`, cos/sin `(R, d)` → rotated x (same ops as HF's apply_rotary_pos_emb)."""
    return x * cos[:, None, :] + rotate_half(x) * sin[:, None, :]


def _linear(x: torch.Tensor, mod: torch.nn.Linear) -> torch.Tensor:
    return F.linear(x, mod.weight, mod.bias)


def _bias(y: torch.Tensor, mod: torch.nn.Linear) -> torch.Tensor:
    return y if mod.bias is None else y + mod.bias


@dataclass
class Chunk:
    """Index plan for one chunk of B pairs whose texts are the U unique texts of the chunk.

    text_rows (R,): row in the packed unique-text tensor (S_u rows) of each pair token row
    pair_of_row (R,): pair (0..B-1) of each row; pos (R,): position in its text
    pad_index (B, T): packed row of (pair, position), R for padding (a zero row is appended)
    flat_of_row (R,): index of each row in the flattened padded (B*T) layout
    last_row (B,): row of each pair's last token (position -2 of the tokenised text)
    lengths (B,): tokens per pair
    """

    text_rows: torch.Tensor
    pair_of_row: torch.Tensor
    pos: torch.Tensor
    pad_index: torch.Tensor
    flat_of_row: torch.Tensor
    last_row: torch.Tensor
    lengths: torch.Tensor

    @property
    def T(self) -> int:
        return int(self.pad_index.shape[1])


def plan_chunk(text_lengths: list[int], pair_text: list[int], device: torch.device) -> Chunk:
    """`text_lengths[u]` of the chunk's unique texts (packed in this order), `pair_text[b]` the
    unique text of pair b."""
    starts = [0]
    for n in text_lengths[:-1]:
        starts.append(starts[-1] + n)
    lengths = [text_lengths[u] for u in pair_text]
    T = max(lengths)
    text_rows, pair_of_row, pos, flat = [], [], [], []
    for b, u in enumerate(pair_text):
        n = text_lengths[u]
        text_rows.append(torch.arange(starts[u], starts[u] + n))
        pair_of_row.append(torch.full((n,), b))
        pos.append(torch.arange(n))
        flat.append(b * T + torch.arange(n))
    text_rows_t = torch.cat(text_rows)
    R = int(text_rows_t.shape[0])
    flat_t = torch.cat(flat)
    pad_index = torch.full((len(pair_text) * T,), R, dtype=torch.long)
    pad_index[flat_t] = torch.arange(R)
    lengths_t = torch.tensor(lengths)
    last_row = torch.cumsum(lengths_t, 0) - 1
    to = lambda t: t.to(device)  # noqa: E731
    return Chunk(
        text_rows=to(text_rows_t), pair_of_row=to(torch.cat(pair_of_row)), pos=to(torch.cat(pos)),
        pad_index=to(pad_index.view(len(pair_text), T)), flat_of_row=to(flat_t),
        last_row=to(last_row), lengths=to(lengths_t),
    )


class FastLayers:
    """Layers L (with SVF) and L+1 of the encoder, prepared for batched candidate evaluation."""

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
        f = {fac.name: fac for fac in svf.factors}
        self.f = f
        cast = lambda t: t.to(dtype).contiguous()  # noqa: E731
        # x V for q, k, v in one matmul: V_qkv (hidden, r_q + r_k + r_v), shared by all candidates.
        self.V_qkv = cast(torch.cat([f[n].Vh.T for n in ("q_proj", "k_proj", "v_proj")], dim=1))
        self.V_gu = cast(torch.cat([f[n].Vh.T for n in ("gate_proj", "up_proj")], dim=1))
        self.V_o = cast(f["o_proj"].Vh.T)  # (n_heads*d, r_o)
        self.V_d = cast(f["down_proj"].Vh.T)  # (intermediate, r_d)
        self.Ut = {n: cast(fac.U.T) for n, fac in f.items()}  # (r, out)
        self.s = torch.cat([fac.s for fac in svf.factors]).to(dtype)  # (svf_size,)
        self.dtype = dtype

    def _rope(self, pos: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.decoder.rotary_emb(like, pos[None, :])  # (1, R, d) each
        return cos[0], sin[0]

    def _gqa(self, kv: torch.Tensor) -> torch.Tensor:
        """(B, n_kv, T, d) → (B, n_heads, T, d), each KV head repeated for its query group (HF order)."""
        B, nkv, T, d = kv.shape
        g = self.n_heads // nkv
        return kv[:, :, None].expand(B, nkv, g, T, d).reshape(B, nkv * g, T, d)

    def _pad(self, rows: torch.Tensor, chunk: Chunk) -> torch.Tensor:
        """Packed `(R, heads, d)` → right-padded `(B, heads, T, d)` (zeros in the padding)."""
        ext = torch.cat([rows, rows.new_zeros((1, *rows.shape[1:]))])
        return ext[chunk.pad_index].transpose(1, 2)

    @torch.inference_mode()
    def features(self, x_text: torch.Tensor, chunk: Chunk, scales: torch.Tensor) -> torch.Tensor:
        """x_text `(S_u, hidden)` packed SVF-layer inputs of the chunk's unique texts; `scales`
        `(B, svf_size)` the SVF z of each pair's candidate → features `(B, hidden)` float32, L2-normed."""
        layer, attn, mlp = self.layer, self.layer.self_attn, self.layer.mlp
        f, d, nh, nkv = self.f, self.head_dim, self.n_heads, self.n_kv
        sz = scales.to(self.dtype) * self.s  # (B, svf_size): s ⊙ z per pair
        sz_q, sz_k, sz_v, sz_o, sz_g, sz_u, sz_d = self.svf.split(sz)
        rows_pair = chunk.pair_of_row
        R = int(rows_pair.shape[0])

        # --- layer L: attention with factored SVF q/k/v/o ---
        xv_text = layer.input_layernorm(x_text) @ self.V_qkv  # (S_u, r_q+r_k+r_v), shared
        xv = xv_text[chunk.text_rows] * torch.cat([sz_q, sz_k, sz_v], dim=1)[rows_pair]  # (R, 3r)
        r_q, r_k = sz_q.shape[1], sz_k.shape[1]
        q = _bias(xv[:, :r_q] @ self.Ut["q_proj"], f["q_proj"].module).view(R, nh, d)
        k = _bias(xv[:, r_q : r_q + r_k] @ self.Ut["k_proj"], f["k_proj"].module).view(R, nkv, d)
        v = _bias(xv[:, r_q + r_k :] @ self.Ut["v_proj"], f["v_proj"].module).view(R, nkv, d)
        del xv, xv_text
        if hasattr(attn, "q_norm"):
            q, k = attn.q_norm(q), attn.k_norm(k)
        cos, sin = self._rope(chunk.pos, q)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # Right padding + causal mask: a real query only sees real keys, so no padding mask.
        out = F.scaled_dot_product_attention(
            self._pad(q, chunk), self._gqa(self._pad(k, chunk)), self._gqa(self._pad(v, chunk)),
            is_causal=True, scale=self.scaling,
        )  # (B, nh, T, d)
        del q, k, v
        a = out.transpose(1, 2).reshape(-1, nh * d)[chunk.flat_of_row]  # (R, nh*d)
        del out
        o = _bias(((a @ self.V_o) * sz_o[rows_pair]) @ self.Ut["o_proj"], f["o_proj"].module)
        h = x_text[chunk.text_rows] + o  # (R, hidden)
        del a, o

        # --- layer L: MLP with factored SVF gate/up/down ---
        gu = (layer.post_attention_layernorm(h) @ self.V_gu) * torch.cat([sz_g, sz_u], dim=1)[rows_pair]
        r_g = sz_g.shape[1]
        gate = _bias(gu[:, :r_g] @ self.Ut["gate_proj"], f["gate_proj"].module)
        up = _bias(gu[:, r_g:] @ self.Ut["up_proj"], f["up_proj"].module)
        del gu
        m = mlp.act_fn(gate) * up  # (R, intermediate)
        del gate, up
        h = h + _bias(((m @ self.V_d) * sz_d[rows_pair]) @ self.Ut["down_proj"], f["down_proj"].module)
        del m
        return self._last_layer(h, chunk)

    def _last_layer(self, h: torch.Tensor, chunk: Chunk) -> torch.Tensor:
        """Layer L+1 at position -2 only (K/V at every position), final norm, L2 norm."""
        layer, attn, d, nh, nkv = self.last, self.last.self_attn, self.head_dim, self.n_heads, self.n_kv
        R, B = int(h.shape[0]), int(chunk.last_row.shape[0])
        x = layer.input_layernorm(h)
        k = _linear(x, attn.k_proj).view(R, nkv, d)
        v = _linear(x, attn.v_proj).view(R, nkv, d)
        q = _linear(x[chunk.last_row], attn.q_proj).view(B, nh, d)
        del x
        if hasattr(attn, "q_norm"):
            q, k = attn.q_norm(q), attn.k_norm(k)
        cos, sin = self._rope(chunk.pos, k)
        k = apply_rope(k, cos, sin)
        q = apply_rope(q, cos[chunk.last_row], sin[chunk.last_row])
        keep = torch.arange(chunk.T, device=h.device)[None, :] < chunk.lengths[:, None]  # (B, T)
        out = F.scaled_dot_product_attention(
            q[:, :, None, :], self._gqa(self._pad(k, chunk)), self._gqa(self._pad(v, chunk)),
            attn_mask=keep[:, None, None, :], scale=self.scaling,
        )  # (B, nh, 1, d)
        y = h[chunk.last_row] + _linear(out.reshape(B, nh * d), attn.o_proj)
        y = y + layer.mlp(layer.post_attention_layernorm(y))
        y = self.decoder.norm(y)
        return F.normalize(y.float(), dim=-1)

    def flops(self, text_lengths: list[int], pair_text: list[int]) -> int:
        """Useful floating-point operations of `features` for one chunk (matmuls + attention)."""
        f, d, nh, nkv = self.f, self.head_dim, self.n_heads, self.n_kv
        H = self.V_qkv.shape[0]
        lengths = [text_lengths[u] for u in pair_text]
        R, B, S_u = sum(lengths), len(lengths), sum(text_lengths)
        rank = {n: fac.rank for n, fac in f.items()}
        out = {n: fac.module.out_features for n, fac in f.items()}
        inn = {n: fac.module.in_features for n, fac in f.items()}
        shared = 2 * S_u * H * self.V_qkv.shape[1]
        per_row = sum(rank[n] * out[n] for n in ("q_proj", "k_proj", "v_proj"))
        per_row += sum(inn[n] * rank[n] + rank[n] * out[n] for n in ("o_proj", "down_proj"))
        per_row += H * self.V_gu.shape[1] + sum(rank[n] * out[n] for n in ("gate_proj", "up_proj"))
        per_row += H * 2 * nkv * d  # layer L+1: K and V at every position
        inter = out["gate_proj"]
        per_pair = H * nh * d * 2 + 3 * H * inter  # layer L+1 at -2: q, o, gate, up, down
        attn = sum(n * (n + 1) // 2 for n in lengths) * nh * d * 2 + sum(lengths) * nh * d * 2
        return int(shared + 2 * R * per_row + 2 * B * per_pair + 2 * attn)
