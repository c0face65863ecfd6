"""A competition's coordinator written from their published algorithm (not their code), for the
conformance tests and `scripts/bench_competition_text.py`:

tokenise `transcript + suffix` without special tokens (suffix `"\n<Head Input>"` for TinyRouter,
none for MiniRouter), append one EOS, rebuild the 7 linear weights of layer L-2 as
U diag(s ⊙ z) Vᵀ (order q, k, v, o, gate, up, down; z from θ after the head), run the whole model,
take `hidden_states[-1][0, -2]`, L2-normalise, logits = W h, argmax of the model rows and of the
role rows (thinker, worker, verifier). The transcript: `"QUERY:\n{query}"`, then
`"[Turn {k} | {role} | {name}]\n{O_k}"` per turn, joined by blank lines; O_k = the output stripped,
head + tail around `"\n... [truncated] ...\n"` over 8000 characters.
"""

from __future__ import annotations

import numpy as np
import torch

SVF_TARGETS = (
    ("self_attn", "q_proj"),
    ("self_attn", "k_proj"),
    ("self_attn", "v_proj"),
    ("self_attn", "o_proj"),
    ("mlp", "gate_proj"),
    ("mlp", "up_proj"),
    ("mlp", "down_proj"),
)
ROLE_ORDER = ("thinker", "worker", "verifier")


class ReferenceCoordinator:
    """A competition's coordinator, from their published algorithm, on an HF causal LM."""

    def __init__(self, model, tokenizer, n_models: int, suffix: str):
        self.model, self.tok, self.n_models, self.suffix = model, tokenizer, n_models, suffix
        self.eos = int(tokenizer.eos_token_id)
        self.layer = model.base_model.layers[model.config.num_hidden_layers - 2]
        self.factors, self.originals = [], []
        for parent, name in SVF_TARGETS:
            w = getattr(getattr(self.layer, parent), name).weight
            self.originals.append(w.data)
            u, s, vh = torch.linalg.svd(w.detach().float(), full_matrices=False)
            self.factors.append((parent, name, u, s, vh))

    def configure(self, theta: np.ndarray, hidden: int):
        """Load θ: the head, and the SVF layer's weights rebuilt in place (`restore()` undoes it)."""
        n_head = (self.n_models + 3) * hidden
        self.head = torch.as_tensor(theta[:n_head].reshape(self.n_models + 3, hidden), dtype=torch.float64)
        z, at = theta[n_head:], 0
        for parent, name, u, s, vh in self.factors:
            block = torch.as_tensor(z[at : at + len(s)], dtype=torch.float32)
            at += len(s)
            w = getattr(getattr(self.layer, parent), name).weight
            w.data = ((u * (s * block)[None, :]) @ vh).to(w.dtype)
        assert at == len(z)

    def restore(self):
        for (parent, name, *_), w0 in zip(self.factors, self.originals):
            getattr(getattr(self.layer, parent), name).weight.data = w0

    def transcript(self, query: str, turns) -> str:  # their `_transcript_text`, turns of (role, name, O_k)
        parts = [f"QUERY:\n{query}"]
        for k, (role, name, out) in enumerate(turns, start=1):
            parts.append(f"[Turn {k} | {role} | {name}]\n{out}")
        return "\n\n".join(parts)

    @torch.no_grad()
    def decide(self, transcript: str) -> tuple[int, str]:
        ids = self.tok(transcript + self.suffix, add_special_tokens=False)["input_ids"] + [self.eos]
        dev = next(self.model.parameters()).device
        out = self.model(
            input_ids=torch.tensor([ids], device=dev),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=dev),
            output_hidden_states=True,
            use_cache=False,
        )
        h = out.hidden_states[-1][0, -2].double().cpu()
        logits = self.head @ (h / torch.linalg.vector_norm(h))
        return int(logits[: self.n_models].argmax()), ROLE_ORDER[int(logits[self.n_models :].argmax())]


def postprocess(raw: str) -> str:
    """Their `roles/postprocess.postprocess` (8000 characters), written out again."""
    text = raw.strip()
    if len(text) <= 8000:
        return text
    marker = "\n... [truncated] ...\n"
    budget = 8000 - len(marker)
    return text[: budget // 2] + marker + text[len(text) - (budget - budget // 2) :]
