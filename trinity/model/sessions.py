"""Incremental encoding of sessions: a turn reads only the tokens its transcript added.

A live session re-reads its whole transcript every turn (trinity.competition.text: the head input is the
question, every earlier turn, then `<Head Input>`), so a 5-turn session would read its first
turn's tokens five times. Attention is causal: the K/V of a token depend only on the tokens before
it. So for what a stream (one trajectory under one candidate θ) has already read, we keep:

- a `PrefixState` (θ-independent, shared by every stream whose text is the same): K/V of layers
  0..L-1 and the SVF-layer input, per token;
- a `StreamState` (its candidate's): K/V of layers L (SVF) and L+1, and the last feature.

The next turn's text shares a token prefix with the previous one (up to the `<Head Input>`
marker, which moves to the end); only the tokens after the longest common prefix run through the
layers, attending to the kept K/V. The features are those of `Router.reference_features` on the
whole text (tests: to ~1e-6 in fp32). The common prefix is found on token ids, so a tokenizer that
merges across the old end is handled (fewer tokens are reused, never wrong ones).

Memory a token: 2·(L)·kv_heads·head_dim + hidden numbers for a prefix state, 4·kv_heads·head_dim
for a stream state (Qwen3-0.6B in bf16: ~110 KB and ~8 KB). `budget_mb` (default 2 GB on
the CPU, a third of the free memory on a GPU) bounds the total: over it, the least recently used
streams are forgotten and read again in full on their next turn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from trinity.errors import InputError
from trinity.model.arrays import Float32Array, Float64Array, Int64Array
from trinity.model.batching import batches, token_key
from trinity.model.encoder import Encoder
from trinity.model.fastpath import FastLayers, add_bias, apply_rope, linear
from trinity.model.svf import SvfLayer

DEFAULT_SESSION_BUDGET_MB = 2048  # on the CPU; on a GPU, a third of its free memory


def default_budget_mb(device: torch.device) -> float:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free / 3 / 2**20
    return DEFAULT_SESSION_BUDGET_MB


KV = tuple[torch.Tensor, torch.Tensor]  # K (n, kv_heads, d) after norm + rotary, V (n, kv_heads, d)


class SessionRouter(Protocol):
    """What the session encoder reads of its router (`trinity.model.router.Router`)."""

    encoder: Encoder
    fast: FastLayers
    svf: SvfLayer
    svf_layer: int
    hidden: int
    max_batch_tokens: int

    def check_thetas(self, thetas: npt.ArrayLike) -> Float64Array: ...

    def split_thetas(self, thetas: Float64Array) -> tuple[Float64Array, Float64Array]: ...

    def token_ids(self, texts: list[str]) -> list[list[int]]: ...


def _storages(*ts: torch.Tensor) -> dict[int, int]:
    """{storage address: bytes} of the tensors' storages (views of one storage count once)."""
    out: dict[int, int] = {}
    for t in ts:
        st = t.untyped_storage()
        out[st.data_ptr()] = st.nbytes()
    return out


def common_prefix(a: Int64Array, b: Int64Array) -> int:
    """Length of the longest common prefix of two id vectors."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


@dataclass
class PrefixState:
    ids: Int64Array  # (n,) tokens read (EOS excluded)
    kv: list[KV]  # layers 0..L-1
    x: torch.Tensor  # (n, hidden) input of layer L

    _held: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)

    def storages(self) -> dict[int, int]:
        if self._held is None:  # built once, never changed: `_trim` asks on every call
            self._held = _storages(self.x, *(t for kv in self.kv for t in kv))
        return self._held


@dataclass
class StreamState:
    ids: Int64Array  # (n,)
    cand: int
    kv: list[KV]  # layers L and L+1
    feature: torch.Tensor  # (hidden,) float32, L2-normalised, at the last token

    _held: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)

    def storages(self) -> dict[int, int]:
        if self._held is None:  # built once, never changed: `_trim` asks on every call
            self._held = _storages(self.feature, *(t for kv in self.kv for t in kv))
        return self._held


@dataclass
class NewRows:
    """B texts, text i has `past[i]` tokens kept and `new[i]` to read, packed text after text.

    pos (S,): position of each new row in its text
    q_index (B, N): packed row of (text, new-row r), padding repeats the text's last new row
    flat_of_row (S,): index of each new row in the flattened (B*N) layout
    last_row (B,): packed row of each text's last token
    mask (B, 1, N, T): additive (0 / -inf), key j visible to new row r of text b iff
        j <= past[b] + r; None when `parts` splits the attention
    last_mask (B, 1, 1, T): the same for a query at each text's last token (keys j < past + new)
    kept_slot (sum past,): slot of each kept token in the flattened (B*T) K/V layout
    new_slot (S,): slot of each new row in it
    all_slot (sum past + new,): slot of every token, text after text (the unpadded layout)
    parts: the attention of the new rows in groups of texts of similar lengths, each
        `(first text, end text, first row, end row, its own plan)`; empty: one group, this plan
    """

    past: list[int]
    new: list[int]
    T: int
    pos: torch.Tensor
    q_index: torch.Tensor
    flat_of_row: torch.Tensor
    last_row: torch.Tensor
    mask: torch.Tensor | None
    last_mask: torch.Tensor
    kept_slot: torch.Tensor
    new_slot: torch.Tensor
    all_slot: torch.Tensor
    parts: list[tuple[int, int, int, int, "NewRows"]] = field(default_factory=list)


def _ranges(lengths: Int64Array) -> Int64Array:
    """`concat(arange(n) for n in lengths)`, without a loop."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


ATTENTION_PART_TEXTS = 8  # the fewest texts in a part of a split attention
ATTENTION_PADDING = 1.3  # a part grows while its padded (texts × N × T) stays within this of its work


def attention_parts(past: list[int], new: list[int]) -> list[int]:
    """Where to split B texts (in their order) into groups for attention: the bounds `[0, …, B]`.

    The padded attention of a group costs `texts × max new × max total` while its work is
    `Σ new × total`: one group for a batch whose lengths differ much pads most of it (a burst of
    64 served sessions, 10 to 73 new tokens: about 5× the work). Callers pass texts sorted by
    length, so groups of neighbours pad little. Every group but the last holds at least
    `ATTENTION_PART_TEXTS` texts (each group is a few more kernels)."""
    bounds = [0]
    start, n_max, t_max, work = 0, 0, 0, 0
    for i, (p, n) in enumerate(zip(past, new)):
        t = p + n
        nm, tm, w = max(n_max, n), max(t_max, t), work + n * t
        if i - start >= ATTENTION_PART_TEXTS and (i - start + 1) * nm * tm > ATTENTION_PADDING * w:
            bounds.append(i)
            start, nm, tm, w = i, n, t, n * t
        n_max, t_max, work = nm, tm, w
    bounds.append(len(new))
    return bounds


def plan_new_rows(
    past: list[int], new: list[int], device: torch.device, dtype: torch.dtype = torch.float32, split: bool = True
) -> NewRows:
    """The index plan of B texts (vectorised: a few numpy passes whatever B, no per-text ops);
    masks in `dtype` (the query's: SDPA takes an additive mask in it). `split`: plan the attention
    in parts of similar lengths (`attention_parts`) when that pads less."""
    p = np.asarray(past, dtype=np.int64)
    n = np.asarray(new, dtype=np.int64)
    B, N, T = len(n), int(n.max()), int((p + n).max())
    bounds = attention_parts(past, new) if split else [0, B]
    r = _ranges(n)  # each new row's index in its text's new rows
    pos = np.repeat(p, n) + r
    flat = np.repeat(np.arange(B, dtype=np.int64) * N, n) + r
    last_row = np.cumsum(n) - 1
    q_index = np.repeat(last_row, N)
    q_index[flat] = np.arange(len(pos), dtype=np.int64)
    zero, hidden = np.float32(0), np.float32(-np.inf)
    last_mask = np.where(np.arange(T)[None, :] < (p + n)[:, None], zero, hidden)  # (B, T)
    base = np.arange(B, dtype=np.int64) * T
    kept = np.repeat(base, p) + _ranges(p)
    new_slot = np.repeat(base + p, n) + r
    all_slot = np.repeat(base, p + n) + _ranges(p + n)

    def dev(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(device)

    def dev_mask(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(device=device, dtype=dtype)

    mask = None
    parts: list[tuple[int, int, int, int, NewRows]] = []
    if len(bounds) > 2:
        rows = np.concatenate([[0], np.cumsum(n)])
        for a, b in zip(bounds[:-1], bounds[1:]):
            sub = plan_new_rows(past[a:b], new[a:b], device, dtype, split=False)
            parts.append((a, b, int(rows[a]), int(rows[b]), sub))
    else:
        q_pos = p[:, None] + np.arange(N)[None, :]  # (B, N)
        mask = dev_mask(np.where(np.arange(T)[None, None, :] <= q_pos[:, :, None], zero, hidden)[:, None])
    return NewRows(
        past=list(past),
        new=list(new),
        T=T,
        pos=dev(pos),
        q_index=dev(q_index.reshape(B, N)),
        flat_of_row=dev(flat),
        last_row=dev(last_row),
        mask=mask,
        last_mask=dev_mask(last_mask[:, None, None]),
        kept_slot=dev(kept),
        new_slot=dev(new_slot),
        all_slot=dev(all_slot),
        parts=parts,
    )


def _as(mask: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """An additive mask in the query's dtype (SDPA's rule), converted only if it is not."""
    return mask if mask.dtype == q.dtype else mask.to(q.dtype)


class SessionEncoder:
    """Features / logits of growing session texts for a fixed population θ (one generation).

    `logits(texts, candidate_of_text, stream_of_text)`: `stream_of_text[i]` names the session text
    i belongs to (any hashable, stable across the turns of one session). One call per turn step
    with every session still running: a stream absent from a call has ended, and its state is
    dropped (states of one batch share storage, so a finished session would otherwise pin its
    batch's). A new `SessionEncoder` per population: stream states hold K/V computed under its θ.

    `keep_absent = True` (the pipelined schedule, `trinity.session.pipeline`): a call holds only
    the sessions that are ready, so an absent stream is not ended; `end_streams` ends them.
    """

    def __init__(self, router: SessionRouter, thetas: npt.ArrayLike, budget_mb: float | None = None) -> None:
        self.router = router
        self.thetas = router.check_thetas(thetas)
        self.heads, svf = router.split_thetas(self.thetas)
        self.fast = router.fast
        self.enc = router.encoder
        self.dev = self.enc.device
        self.L = router.svf_layer
        self.z = torch.as_tensor(svf, dtype=torch.float32, device=self.dev)  # (P, svf_size)
        self.budget = int((default_budget_mb(self.dev) if budget_mb is None else budget_mb) * 2**20)
        self.prefixes: dict[str, PrefixState] = {}
        self.streams: OrderedDict[Hashable, tuple[str, StreamState | None]] = OrderedDict()  # LRU
        self.tokens_read = 0  # new tokens run through the layers (benchmarks)
        self.tokens_seen = 0  # tokens of all texts asked for
        self.keep_absent = False  # True: only `end_streams` ends a stream (pipelined sessions)
        self._merged_w: dict[str, torch.Tensor] | None = None  # layer L under a single candidate
        if self.thetas.shape[0] == 1:
            self._merged()  # built here, not in the first call's time

    # ---- public ----

    def logits(
        self, texts: list[str], candidate_of_text: npt.ArrayLike, stream_of_text: Iterable[Hashable]
    ) -> Float32Array:
        """texts (N), candidate index and stream id per text → logits (N, n_models + 3) float32."""
        feats = self.features(texts, candidate_of_text, stream_of_text).astype(np.float64)
        cand = np.asarray(candidate_of_text, dtype=np.int64)
        logits: Float32Array = np.einsum("nh,nch->nc", feats, self.heads[cand]).astype(np.float32)
        return logits

    @torch.inference_mode()
    def features(
        self, texts: list[str], candidate_of_text: npt.ArrayLike, stream_of_text: Iterable[Hashable]
    ) -> Float32Array:
        cand = np.asarray(candidate_of_text, dtype=np.int64)
        streams = list(stream_of_text)
        P = self.thetas.shape[0]
        if (
            cand.shape != (len(texts),)
            or len(streams) != len(texts)
            or (cand.size and (cand.min() < 0 or cand.max() >= P))
        ):
            raise InputError(
                f"session encoder: need one candidate in 0..{P - 1} and one stream id per text "
                f"({len(texts)} texts, {cand.shape} candidates, {len(streams)} streams)"
            )
        if len(set(streams)) != len(streams):
            raise InputError("session encoder: a stream id appears twice in one call (one text per stream per turn)")
        ids = [np.asarray(i[:-1], dtype=np.int64) for i in self.router.token_ids(texts)]  # EOS dropped
        keys = [token_key(i) for i in ids]
        self.tokens_seen += sum(len(i) for i in ids)
        prefix = self._prefix_states(ids, keys, streams)
        out = self._stream_features(ids, keys, cand, streams, prefix)
        if not self.keep_absent:
            asked = set(streams)
            for ended in [s for s in self.streams if s not in asked]:
                del self.streams[ended]
        self._trim()
        return out

    def end_streams(self, streams: Iterable[Hashable]) -> None:
        """Forget the states of sessions that have ended (their prefixes go with the last user)."""
        for s in streams:
            self.streams.pop(s, None)
        self._trim()

    @property
    def nbytes(self) -> int:
        """Bytes held by the kept states (each tensor storage once: states of one batch share)."""
        held: dict[int, int] = {}
        for _, st in self.streams.values():
            if st is not None:
                held.update(st.storages())
        for pst in self.prefixes.values():
            held.update(pst.storages())
        return sum(held.values())

    # ---- layers 0..L-1: θ-independent, shared by texts with the same tokens ----

    def _prefix_states(self, ids: list[Int64Array], keys: list[str], streams: list[Hashable]) -> dict[str, PrefixState]:
        todo: dict[str, tuple[Int64Array, PrefixState | None]] = {}
        for i, k in enumerate(keys):
            if k in self.prefixes or k in todo:
                continue
            prev = self.streams.get(streams[i])
            parent = self.prefixes.get(prev[0]) if prev else None
            todo[k] = (ids[i], parent)
        if todo:
            items = list(todo.items())
            reuse = [min(common_prefix(p.ids, i), len(i) - 1) if p is not None else 0 for _, (i, p) in items]
            order = sorted(range(len(items)), key=lambda j: len(items[j][1][0]))
            for group in batches(order, lambda j: len(items[j][1][0]), self.router.max_batch_tokens):
                self._extend_prefix(
                    [items[j][0] for j in group],
                    [items[j][1][0] for j in group],
                    [items[j][1][1] for j in group],
                    [reuse[j] for j in group],
                )
        return {k: self.prefixes[k] for k in keys}

    def _extend_prefix(
        self, keys: list[str], ids: list[Int64Array], parents: list[PrefixState | None], reuse: list[int]
    ) -> None:
        dec = self.enc.decoder
        new = [len(i) - r for i, r in zip(ids, reuse)]
        plan = plan_new_rows(reuse, new, self.dev, self.enc.dtype)
        rows = torch.as_tensor(np.concatenate([i[r:] for i, r in zip(ids, reuse)]), device=self.dev)
        x = dec.embed_tokens(rows)  # (S, hidden)
        cos, sin = self.fast._rope(plan.pos, x)
        kv_out: list[list[KV]] = [[] for _ in keys]
        for layer_index in range(self.L):
            layer = dec.layers[layer_index]
            attn = layer.self_attn
            pasts = [p.kv[layer_index] if p is not None else None for p in parents]
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(len(rows), -1, self.fast.head_dim)
            k = attn.k_proj(h).view(len(rows), -1, self.fast.head_dim)
            v = attn.v_proj(h).view(len(rows), -1, self.fast.head_dim)
            if hasattr(attn, "q_norm"):
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            a, full = self._attend(q, k, v, pasts, plan)
            for b, kv in enumerate(full):
                kv_out[b].append(kv)
            x = x + attn.o_proj(a)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        offsets = np.cumsum([0, *new])
        for b, key in enumerate(keys):
            mine = x[int(offsets[b]) : int(offsets[b + 1])]
            parent = parents[b]
            xs = mine if parent is None or reuse[b] == 0 else torch.cat([parent.x[: reuse[b]], mine])
            self.prefixes[key] = PrefixState(ids=ids[b], kv=kv_out[b], x=xs)
            self.tokens_read += new[b]

    # ---- layers L (SVF, per candidate) and L+1 ----

    def _stream_features(
        self,
        ids: list[Int64Array],
        keys: list[str],
        cand: Int64Array,
        streams: list[Hashable],
        prefix: dict[str, PrefixState],
    ) -> Float32Array:
        H = self.router.hidden
        out = np.empty((len(ids), H), dtype=np.float32)
        work: list[tuple[int, StreamState | None, int]] = []
        for i, s in enumerate(streams):
            prev = self.streams.get(s)
            state = prev[1] if prev else None
            if state is not None and state.cand != int(cand[i]):
                state = None  # the stream changed candidate: start over
            if state is not None and len(state.ids) == len(ids[i]) and common_prefix(state.ids, ids[i]) == len(ids[i]):
                out[i] = state.feature.numpy() if state.feature.device.type == "cpu" else state.feature.cpu().numpy()
                self.streams[s] = (keys[i], state)
                self.streams.move_to_end(s)
                continue
            reuse = min(common_prefix(state.ids, ids[i]), len(ids[i]) - 1) if state is not None else 0
            work.append((i, state if reuse > 0 else None, reuse))
        order = sorted(range(len(work)), key=lambda j: len(ids[work[j][0]]))
        for group in batches(order, lambda j: len(ids[work[j][0]]), self.router.max_batch_tokens):
            items = [work[j] for j in group]
            feats, kvs = self._extend_stream(
                [prefix[keys[i]] for i, _, _ in items],
                [st for _, st, _ in items],
                [r for _, _, r in items],
                [int(cand[i]) for i, _, _ in items],
            )
            for (i, _, _), f, kv in zip(items, feats, kvs):
                out[i] = f.cpu().numpy()
                self.streams[streams[i]] = (keys[i], StreamState(ids=ids[i], cand=int(cand[i]), kv=kv, feature=f))
                self.streams.move_to_end(streams[i])
        return out

    def _extend_stream(
        self, prefixes: list[PrefixState], states: list[StreamState | None], reuse: list[int], cands: list[int]
    ) -> tuple[list[torch.Tensor], list[list[KV]]]:
        fast, f, d, nh, nkv = self.fast, self.fast.f, self.fast.head_dim, self.fast.n_heads, self.fast.n_kv
        new = [len(p.ids) - r for p, r in zip(prefixes, reuse)]
        plan = plan_new_rows(reuse, new, self.dev, fast.dtype)
        S = len(plan.pos)
        x = torch.cat([p.x[r:] for p, r in zip(prefixes, reuse)])  # (S, hidden) layer-L input
        if self.thetas.shape[0] == 1:  # one candidate (a served router): its layer L as plain matrices
            W = self._merged()
            qkv = fast.ln1.unit(x) @ W["qkv"]
            q_, k_, v_ = torch.split(qkv, [nh * d, nkv * d, nkv * d], dim=1)
            q = add_bias(q_, f["q_proj"].module).view(S, nh, d)
            k = add_bias(k_, f["k_proj"].module).view(S, nkv, d)
            v = add_bias(v_, f["v_proj"].module).view(S, nkv, d)
        else:
            cand_of_row = torch.as_tensor(np.repeat(cands, new), device=self.dev)
            # Per-row SVF scales s ⊙ z of the row's candidate: (S, r) each.
            sz = self.router.svf.split((self.z[cand_of_row] * fast.s).to(fast.dtype))
            sz_q, sz_k, sz_v, sz_o, sz_g, sz_u, sz_d = sz
            xv = fast.shared(x)
            q = add_bias((xv[0] * sz_q) @ fast.Ut["q_proj"], f["q_proj"].module).view(S, nh, d)
            k = add_bias((xv[1] * sz_k) @ fast.Ut["k_proj"], f["k_proj"].module).view(S, nkv, d)
            v = add_bias((xv[2] * sz_v) @ fast.Ut["v_proj"], f["v_proj"].module).view(S, nkv, d)

        # --- layer L: attention, SVF ---
        cos, sin = fast._rope(plan.pos, q)
        q, k = fast._norm_rope(q, k, fast.qk_norms, cos, sin, cos, sin)
        a, kv_L = self._attend(q, k, v, [st.kv[0] if st is not None else None for st in states], plan)
        mlp = fast.layer.mlp
        if self.thetas.shape[0] == 1:
            h = add_bias(a @ W["o"], f["o_proj"].module) + x
            gate_, up_ = torch.split(fast.ln2.unit(h) @ W["gate_up"], W["gate_up"].shape[1] // 2, dim=1)
            gate, up = add_bias(gate_, f["gate_proj"].module), add_bias(up_, f["up_proj"].module)
            m = F.silu(gate) * up if isinstance(mlp.act_fn, torch.nn.SiLU) else mlp.act_fn(gate) * up
            h = h + add_bias(m @ W["down"], f["down_proj"].module)
        else:
            h = add_bias(((a @ fast.V_o) * sz_o) @ fast.Ut["o_proj"], f["o_proj"].module) + x
            # --- layer L: MLP ---
            x2 = fast.ln2.unit(h)
            gate = add_bias(((x2 @ fast.V_g) * sz_g) @ fast.Ut["gate_proj"], f["gate_proj"].module)
            up = add_bias(((x2 @ fast.V_u) * sz_u) @ fast.Ut["up_proj"], f["up_proj"].module)
            m = F.silu(gate) * up if isinstance(mlp.act_fn, torch.nn.SiLU) else mlp.act_fn(gate) * up
            h = h + add_bias(((m @ fast.V_d) * sz_d) @ fast.Ut["down_proj"], f["down_proj"].module)

        # --- layer L+1: K/V of the new rows, then attention at each text's last token only ---
        layer, attn = fast.last, fast.last.self_attn
        xl = fast.last_ln1.unit(h)
        k1 = F.linear(xl, fast.W_last["k_proj"], attn.k_proj.bias).view(S, nkv, d)
        v1 = F.linear(xl, fast.W_last["v_proj"], attn.v_proj.bias).view(S, nkv, d)
        q1 = F.linear(xl[plan.last_row], fast.W_last["q_proj"], attn.q_proj.bias).view(-1, nh, d)  # (B, nh, d)
        q1, k1 = fast._norm_rope(q1, k1, fast.last_qk_norms, cos[plan.last_row], sin[plan.last_row], cos, sin)
        B = len(new)
        K, V, kv_L1 = self._full_kv(k1, v1, [st.kv[1] if st is not None else None for st in states], plan)
        o = fast._attention(q1[:, :, None, :], K, V, attn_mask=_as(plan.last_mask, q1))  # (B, nh, 1, d)
        y = h[plan.last_row] + linear(o.reshape(B, nh * d), attn.o_proj)
        y = y + layer.mlp(layer.post_attention_layernorm(y))
        feats = F.normalize(self.enc.decoder.norm(y).float(), dim=-1)  # (B, hidden)
        return list(feats), [[kl, kl1] for kl, kl1 in zip(kv_L, kv_L1)]

    @torch.inference_mode()
    def _merged(self) -> dict[str, torch.Tensor]:
        """Layer L's matrices under the one candidate, `V diag(s ⊙ z) Uᵀ` (input norms folded in
        as in `FastLayers`), built once (with the encoder): `x W` is one matmul where the factored form is two
        and a scaling (a third less work in that layer, the same result to float rounding)."""
        if self._merged_w is None:
            fast = self.fast
            sz = self.router.svf.split((self.z[0] * fast.s).to(torch.float32))
            sz_q, sz_k, sz_v, sz_o, sz_g, sz_u, sz_d = sz
            r_q, r_k = fast.f["q_proj"].rank, fast.f["k_proj"].rank
            Vq, Vk, Vv = torch.split(fast.V_qkv.float(), [r_q, r_k, fast.f["v_proj"].rank], dim=1)

            def w(V: torch.Tensor, z: torch.Tensor, name: str) -> torch.Tensor:
                return (V.float() * z) @ fast.Ut[name].float()

            qkv = torch.cat([w(Vq, sz_q, "q_proj"), w(Vk, sz_k, "k_proj"), w(Vv, sz_v, "v_proj")], dim=1)
            gate_up = torch.cat([w(fast.V_g, sz_g, "gate_proj"), w(fast.V_u, sz_u, "up_proj")], dim=1)
            self._merged_w = {
                name: t.to(fast.dtype).contiguous()
                for name, t in (
                    ("qkv", qkv),
                    ("o", w(fast.V_o, sz_o, "o_proj")),
                    ("gate_up", gate_up),
                    ("down", w(fast.V_d, sz_d, "down_proj")),
                )
            }
        return self._merged_w

    # ---- attention over kept + new K/V ----

    def _full_kv(
        self, k: torch.Tensor, v: torch.Tensor, pasts: list[KV | None], plan: NewRows
    ) -> tuple[torch.Tensor, torch.Tensor, list[KV]]:
        """Per text: K/V of all its tokens (kept ones, then the new rows) → padded
        `(B, kv_heads, T, d)` K and V, and the per-text `(t, kv_heads, d)` pairs to keep.

        A fixed number of kernels whatever B (one gather of the kept K/V, two scatters): a GPU
        pays a launch per op, and 26 layers × 512 texts of per-text copies would be ~50k of them.
        The pairs to keep are views of one unpadded copy per call (a storage shared by the batch's
        texts; `SessionEncoder.nbytes` counts each storage once)."""
        B, T = len(plan.new), plan.T
        nkv, d = k.shape[1], k.shape[2]
        K = k.new_zeros((B * T, nkv, d))
        V = v.new_zeros((B * T, nkv, d))
        kept: list[tuple[KV, int]] = []
        for kv, p in zip(pasts, plan.past):
            if p:
                assert kv is not None, "a text with kept tokens has their K/V"
                kept.append((kv, p))
        if kept:
            K[plan.kept_slot] = torch.cat([kv[0][:p] for kv, p in kept])
            V[plan.kept_slot] = torch.cat([kv[1][:p] for kv, p in kept])
        K[plan.new_slot] = k
        V[plan.new_slot] = v
        Kc, Vc = K[plan.all_slot], V[plan.all_slot]  # (sum t, nkv, d): what is kept, unpadded
        full: list[KV] = []
        start = 0
        for p, n in zip(plan.past, plan.new):
            full.append((Kc[start : start + p + n], Vc[start : start + p + n]))
            start += p + n
        K, V = K.view(B, T, nkv, d), V.view(B, T, nkv, d)
        return K.transpose(1, 2), V.transpose(1, 2), full

    def _attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pasts: list[KV | None], plan: NewRows
    ) -> tuple[torch.Tensor, list[KV]]:
        """New rows' q `(S, heads, d)`, k/v `(S, kv_heads, d)`; `pasts[b]` the kept K/V of text b
        (or None) → attention output `(S, heads*d)` and each text's full K/V. Split in
        `plan.parts` when it has them (each part padded to its own lengths)."""
        if not plan.parts:
            return self._attend_part(q, k, v, pasts, plan)
        outs: list[torch.Tensor] = []
        full: list[KV] = []
        for a, b, r0, r1, sub in plan.parts:
            out, kv = self._attend_part(q[r0:r1], k[r0:r1], v[r0:r1], pasts[a:b], sub)
            outs.append(out)
            full.extend(kv)
        return torch.cat(outs), full

    def _attend_part(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pasts: list[KV | None], plan: NewRows
    ) -> tuple[torch.Tensor, list[KV]]:
        assert plan.mask is not None, "a plan in parts is attended part by part"
        K, V, full = self._full_kv(k, v, pasts, plan)
        Q = q[plan.q_index].transpose(1, 2)  # (B, heads, N, d)
        out = self.fast._attention(Q, K, V, attn_mask=_as(plan.mask, Q))  # (B, heads, N, d)
        B, nh, N, d = out.shape
        return out.transpose(1, 2).reshape(B * N, nh * d)[plan.flat_of_row], full

    # ---- memory ----

    def _trim(self) -> None:
        """Keep only what a stream's next turn can use, within the budget (LRU over streams).
        A storage is freed when the last state using it goes, so bytes are counted per storage."""
        refs: dict[str, int] = {}
        for key, _ in self.streams.values():
            refs[key] = refs.get(key, 0) + 1
        for key in [k for k in self.prefixes if k not in refs]:
            del self.prefixes[key]
        users: dict[int, int] = {}
        size: dict[int, int] = {}
        held = [st for _, st in self.streams.values() if st is not None] + list(self.prefixes.values())
        for state in held:
            for ptr, n in state.storages().items():
                users[ptr] = users.get(ptr, 0) + 1
                size[ptr] = n
        total = sum(size.values())

        def release(state: PrefixState | StreamState) -> int:
            freed = 0
            for ptr in state.storages():
                users[ptr] -= 1
                if users[ptr] == 0:
                    freed += size[ptr]
            return freed

        while self.streams and total > self.budget:
            _, (key, evicted) = self.streams.popitem(last=False)
            if evicted is not None:
                total -= release(evicted)
            refs[key] -= 1
            if refs[key] == 0 and key in self.prefixes:
                total -= release(self.prefixes.pop(key))
