"""`Router`: θ → logits for transcripts, with a fast batched path and a naive reference path.

θ layout (see `theta`): `[head (n_models + 3, hidden) flattened | svf (svf_size,)]`.
Feature of a text: final-layer hidden state at position -2 (the token before EOS) of the encoder
with SVF scales `z` on layer L = num_layers - 2, L2-normalised; logits = head @ feature.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from trinity.errors import ConfigError, InputError, check_stop
from trinity.model.arrays import Float32Array, Float64Array
from trinity.model.batching import batches, token_key
from trinity.model.encoder import Encoder
from trinity.model.fastpath import FastLayers, plan_texts
from trinity.model.sessions import SessionEncoder
from trinity.model.svf import SvfLayer
from trinity.model.theta import N_ROLES, split_theta, theta_size

if TYPE_CHECKING:
    from trinity.model.sessions import SessionEncoder

DEFAULT_MAX_BATCH_TOKENS = 8192
DEFAULT_CACHE_MB = 1024


def right_padded(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists → `input_ids (B, T)` right-padded with `pad_id` and `attention_mask (B, T)`."""
    T = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for b, s in enumerate(seqs):
        input_ids[b, : len(s)] = torch.tensor(s)
        mask[b, : len(s)] = 1
    return input_ids, mask


class _StopForward(Exception):
    """Raised by the pre-hook on layer L: the layers after it are not needed for the cache."""


class LayerInputCache:
    """LRU map token-id hash → SVF-layer input `(n - 1, hidden)` on the model's device, bounded
    by `max_bytes`."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[str, torch.Tensor] = OrderedDict()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> torch.Tensor | None:
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        self.hits += 1
        self._items.move_to_end(key)
        return item

    def put(self, key: str, value: torch.Tensor) -> None:
        if key in self._items:
            return
        size = value.numel() * value.element_size()
        self._items[key] = value
        self.bytes += size
        while self.bytes > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self.bytes -= old.numel() * old.element_size()


class Router:
    """The trainable router over a frozen encoder.

    `max_batch_tokens` bounds the token rows (candidate × transcript tokens) processed at once,
    hence memory (~60 KB a row at Qwen3-0.6B size in fp32); `cache_mb` bounds the SVF-layer
    input cache (~4 KB a token at hidden 1024 in fp32).
    """

    def __init__(
        self,
        encoder: Encoder,
        n_models: int,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        cache_mb: float = DEFAULT_CACHE_MB,
    ) -> None:
        if n_models < 1:
            raise ConfigError(f"the router needs at least 1 model in the pool, got {n_models}")
        if max_batch_tokens < 1:
            raise ConfigError(f"--max-batch-tokens must be >= 1, got {max_batch_tokens}")
        if encoder.num_layers < 2:
            raise ConfigError(f"encoder {encoder.name!r} has {encoder.num_layers} layer(s); the router needs >= 2")
        self.encoder = encoder
        self.n_models = n_models
        self.n_outputs = n_models + N_ROLES
        self.hidden = encoder.hidden_size
        self.svf_layer = encoder.num_layers - 2
        self.max_batch_tokens = int(max_batch_tokens)
        self.svf = SvfLayer(encoder.decoder, self.svf_layer)
        self.svf_size = self.svf.size
        self.n_params = theta_size(n_models, self.hidden, self.svf_size)
        self.fast = FastLayers(encoder.decoder, self.svf, encoder.dtype)
        self.cache = LayerInputCache(int(cache_mb * 2**20))
        self.last_flops = 0  # useful FLOPs of the last fast-path call (benchmarks)

    # ---- θ ----

    def initial_mean(self) -> Float64Array:
        """θ at init: head zeros, SVF scales ones (the unmodified encoder). float64 `(n_params,)`."""
        theta = np.zeros(self.n_params, dtype=np.float64)
        theta[self.n_outputs * self.hidden :] = 1.0
        return theta

    def check_thetas(self, thetas: npt.ArrayLike) -> Float64Array:
        batch = np.asarray(thetas, dtype=np.float64)
        if batch.ndim == 1:
            batch = batch[None, :]
        if batch.ndim != 2 or batch.shape[1] != self.n_params:
            raise InputError(
                f"theta batch has shape {batch.shape}; this router needs (P, {self.n_params}) "
                f"({self.n_models} models, hidden {self.hidden}, {self.svf_size} SVF scales)"
            )
        if not np.all(np.isfinite(batch)):
            raise InputError("theta contains NaN or infinite values; check the optimizer state")
        return batch

    def split_thetas(self, thetas: Float64Array) -> tuple[Float64Array, Float64Array]:
        """(P, D) → heads (P, n_outputs, hidden), svf (P, svf_size)."""
        n_head = self.n_outputs * self.hidden
        return thetas[:, :n_head].reshape(-1, self.n_outputs, self.hidden), thetas[:, n_head:]

    # ---- the SVF-layer input cache ----

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        if isinstance(texts, str):
            raise InputError("texts must be a list of strings, not one string")
        ids = self.encoder.token_ids_many(texts)
        for t, i in zip(texts, ids):
            if len(i) < 2:
                raise InputError(f"text {t[:40]!r} tokenises to nothing before EOS; build it with encoder_input()")
        return ids

    def layer_inputs(self, texts: list[str]) -> list[torch.Tensor]:
        """SVF-layer input `(n_i - 1, hidden)` per text (positions 0..-2 of the tokens with EOS),
        from the cache or computed by running layers 0..L-1 on the missing texts in batches."""
        ids = self.token_ids(texts)
        keys = [token_key(i) for i in ids]
        found: dict[str, torch.Tensor] = {}
        missing: dict[str, list[int]] = {}
        for k, i in zip(keys, ids):
            if k in found or k in missing:
                continue
            hit = self.cache.get(k)
            if hit is None:
                missing[k] = i[:-1]  # causal: EOS never influences position -2, skip it
            else:
                found[k] = hit
        # Batched (shortest first): a GPU wants it. Which texts share a batch changes the last
        # bits (padding, batch shape), so cached training encodes every train+val question once,
        # in fixed chunks, before its first generation (trinity.optim.engine._warmup): a resumed
        # run's cache then holds exactly what the uninterrupted run's did.
        if missing:
            for batch in self.prefix_batches(missing):
                check_stop()  # a SIGTERM stops a long encode between batches
                for k, x in zip(batch, self._run_prefix([missing[k] for k in batch])):
                    self.cache.put(k, x)
                    found[k] = x
        return [found[k] for k in keys]

    def prefix_batches(self, missing: dict[str, list[int]]) -> list[list[str]]:
        """How `layer_inputs` batches the texts it must compute (key → token ids without EOS, in
        first-seen order): shortest first, at most `max_batch_tokens` tokens a batch. A batch's
        composition fixes the last bits of its texts' layer inputs (padding, batch shape)."""
        order = sorted(missing, key=lambda k: len(missing[k]))
        return list(batches(order, lambda k: len(missing[k]), self.max_batch_tokens))

    @torch.inference_mode()
    def _run_prefix(self, seqs: list[list[int]]) -> list[torch.Tensor]:
        """Layers 0..L-1 on right-padded `seqs`; returns the input of layer L per sequence."""
        dev = self.encoder.device
        input_ids, mask = right_padded(seqs, self.encoder.eos_token_id)
        captured: list[torch.Tensor] = []

        def grab(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            captured.append(args[0] if args else kwargs["hidden_states"])
            raise _StopForward

        handle = self.encoder.decoder.layers[self.svf_layer].register_forward_pre_hook(grab, with_kwargs=True)
        try:
            self.encoder.decoder(input_ids=input_ids.to(dev), attention_mask=mask.to(dev), use_cache=False)
        except _StopForward:
            pass
        finally:
            handle.remove()
        x = captured[0]  # (B, T, hidden)
        return [x[b, : len(s)].clone() for b, s in enumerate(seqs)]

    # ---- fast path ----

    def text_groups(self, lengths: list[int]) -> list[list[int]]:
        """How the fast path groups N texts of these SVF-layer input lengths (tokens without EOS):
        indices, shortest first, at most `max_batch_tokens` token rows a group. A text's features
        depend in the last bits on its group (its shape), not on which process computes it: a
        group passed alone, in this order, is computed exactly as inside the whole batch."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        return list(batches(order, lambda i: lengths[i], self.max_batch_tokens))

    def _grid_features(self, xs: list[torch.Tensor], scales: Float64Array) -> torch.Tensor:
        """Every candidate on every text: SVF-layer inputs `xs` (N texts), `scales` (P, svf_size)
        → features (P, N, hidden) float32 on the CPU. Texts are grouped (shortest first) and
        candidates chunked so that one step handles at most `max_batch_tokens` token rows."""
        dev = self.encoder.device
        P, N = scales.shape[0], len(xs)
        out = torch.empty((P, N, self.hidden), dtype=torch.float32)
        lengths = [int(x.shape[0]) for x in xs]
        z_all = torch.as_tensor(scales, dtype=torch.float32, device=dev)
        for group in self.text_groups(lengths):
            check_stop()  # a SIGTERM stops a long feature pass between groups
            group_lengths = [lengths[i] for i in group]
            plan = plan_texts(group_lengths, dev)
            x_text = torch.cat([xs[i] for i in group])  # (S, hidden)
            xv = self.fast.shared(x_text)
            self.last_flops += self.fast.flops(group_lengths, 0, shared=True)
            step = max(1, self.max_batch_tokens // plan.S)
            idx = torch.as_tensor(group)
            for c0 in range(0, P, step):
                c1 = min(P, c0 + step)
                feats = self.fast.features(x_text, xv, plan, z_all[c0:c1])  # (c1-c0, B, hidden)
                out[c0:c1, idx] = feats.cpu()
                self.last_flops += self.fast.flops(group_lengths, c1 - c0, shared=False)
        return out

    def population_features(self, thetas: npt.ArrayLike, texts: list[str]) -> Float32Array:
        """Every candidate on every text: thetas (P, D) → features (P, N, hidden) float32."""
        batch = self.check_thetas(thetas)
        return self.features_of_inputs(batch, self.layer_inputs(texts))

    def features_of_inputs(self, thetas: npt.ArrayLike, xs: list[torch.Tensor]) -> Float32Array:
        """`population_features` of texts given by their SVF-layer inputs `xs` (`layer_inputs`)."""
        _, svf = self.split_thetas(self.check_thetas(thetas))
        dev = self.encoder.device
        self.last_flops = 0
        feats: Float32Array = self._grid_features([x.to(dev) for x in xs], svf).numpy()
        return feats

    def head_logits(self, thetas: npt.ArrayLike, feats: npt.ArrayLike) -> Float32Array:
        """thetas (P, D), features (P, N, hidden) float32 → logits (P, N, n_models + 3) float32."""
        heads, _ = self.split_thetas(self.check_thetas(thetas))
        out: Float32Array = np.einsum("pnh,pch->pnc", np.asarray(feats).astype(np.float64), heads).astype(np.float32)
        return out

    def population_logits(self, thetas: npt.ArrayLike, texts: list[str]) -> Float32Array:
        """thetas (P, D), N texts → logits (P, N, n_models + 3) float32 (fast path)."""
        return self.head_logits(thetas, self.population_features(thetas, texts))

    def paired_features(
        self, thetas: npt.ArrayLike, texts: list[str], candidate_of_text: npt.ArrayLike
    ) -> Float32Array:
        """Text i under candidate `candidate_of_text[i]`: thetas (P, D) → features (N, hidden)."""
        batch = self.check_thetas(thetas)
        cand = np.asarray(candidate_of_text, dtype=np.int64)
        if cand.shape != (len(texts),) or (cand.size and (cand.min() < 0 or cand.max() >= batch.shape[0])):
            raise InputError(
                f"candidate_of_text must hold one index in 0..{batch.shape[0] - 1} per text "
                f"({len(texts)} texts), got shape {cand.shape}"
            )
        _, svf = self.split_thetas(batch)
        xs = self.layer_inputs(texts)
        self.last_flops = 0
        out = np.empty((len(texts), self.hidden), dtype=np.float32)
        for c in np.unique(cand):  # each candidate on its own texts: a 1 × n grid
            mine = np.flatnonzero(cand == c)
            out[mine] = self._grid_features([xs[i] for i in mine], svf[c : c + 1])[0].numpy()
        return out

    def paired_logits(self, thetas: npt.ArrayLike, texts: list[str], candidate_of_text: npt.ArrayLike) -> Float32Array:
        """thetas (P, D), N texts, candidate index per text → logits (N, n_models + 3) float32."""
        batch = self.check_thetas(thetas)
        heads, _ = self.split_thetas(batch)
        feats = self.paired_features(batch, texts, candidate_of_text).astype(np.float64)
        cand = np.asarray(candidate_of_text, dtype=np.int64)
        logits: Float32Array = np.einsum("nh,nch->nc", feats, heads[cand]).astype(np.float32)
        return logits

    def session_encoder(self, thetas: npt.ArrayLike, budget_mb: float | None = None) -> SessionEncoder:
        """A `SessionEncoder` for population `thetas`: logits of growing session transcripts, each
        turn reading only the tokens it added (see `trinity.model.sessions`)."""
        return SessionEncoder(self, thetas, budget_mb)

    # ---- naive reference path ----

    @torch.inference_mode()
    def reference_features(self, theta: npt.ArrayLike, texts: list[str]) -> Float32Array:
        """One candidate, naive: rebuild the SVF layer's weights, run the whole encoder on the
        (right-padded) texts, take position -2 of each. theta (D,) → features (N, hidden) float32."""
        _, svf = split_theta(self.check_thetas(theta)[0], self.n_models, self.hidden)
        ids = self.token_ids(texts)
        out = np.empty((len(texts), self.hidden), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        dev = self.encoder.device
        with self.svf.applied(svf):
            for batch in batches(order, lambda i: len(ids[i]), self.max_batch_tokens):
                input_ids, mask = right_padded([ids[i] for i in batch], self.encoder.eos_token_id)
                hidden = self.encoder.decoder(
                    input_ids=input_ids.to(dev), attention_mask=mask.to(dev), use_cache=False
                ).last_hidden_state  # (B, T, hidden), after the final norm
                at = torch.tensor([len(ids[i]) - 2 for i in batch], device=dev)
                feats = F.normalize(hidden[torch.arange(len(batch), device=dev), at].float(), dim=-1)
                out[batch] = feats.cpu().numpy()
        return out

    def reference_logits(self, theta: npt.ArrayLike, texts: list[str]) -> Float32Array:
        """theta (D,), N texts → logits (N, n_models + 3) float32 (naive path)."""
        vec = self.check_thetas(theta)[0]
        head, _ = split_theta(vec, self.n_models, self.hidden)
        feats = self.reference_features(vec, texts).astype(np.float64)
        logits: Float32Array = (feats @ head.T).astype(np.float32)
        return logits
