"""Can the router's frozen features tell a session's states apart well enough to ask a Worker
again after a Verifier's REVISE? On the practice questions' synthesised transcripts
(`trinity.optim.warmstart.role_transcripts`: a bare query, then 1-4 earlier turns alternating
Worker / Verifier REVISE), 30 questions fit and 30 held out, a few random splits; the held-out
share sent to the wrong role, by state.

Labels: `shipped` (bare query -> Worker, every later state -> Verifier, what `fit_role_rows`
fits) or `retry` (bare query and every state after a REVISE -> Worker, after a Worker answer ->
Verifier: a rejected answer is answered again). `--svf-fit` also fits the SVF scales of the
router's one SVF layer by gradient with the role rows (the reference path, made differentiable
with `torch.func.functional_call`), `--svf-l2` pulling them to 1.

Usage: OMP_NUM_THREADS=2 python scripts/role_states_probe.py [--encoder tiny-qwen3] [--labels retry] [--svf-fit]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

from trinity.benchmarks.practice import practice_questions
from trinity.competition.text import router_text
from trinity.config import load_config
from trinity.model import ROLES
from trinity.model.router import right_padded
from trinity.optim import warmstart
from trinity.optim.fitness import build_router

WORKER, VERIFIER = ROLES.index("Worker"), ROLES.index("Verifier")
STATES = ("bare", "W", "W V", "W V W", "W V W V")


def svf_features(router, ids: list[list[int]], z: torch.Tensor) -> torch.Tensor:
    """Features `(N, hidden)` of token ids under SVF scales `z`, differentiable in `z`."""
    dec = router.encoder.decoder
    name_of = {m: n for n, m in dec.named_modules()}
    params = {
        f"{name_of[f.module]}.weight": f.weight(zz).to(f.module.weight.dtype)
        for f, zz in zip(router.svf.factors, router.svf.split(z))
    }
    input_ids, mask = right_padded(ids, router.encoder.eos_token_id)
    hidden = torch.func.functional_call(
        dec, params, args=(), kwargs={"input_ids": input_ids, "attention_mask": mask, "use_cache": False}
    ).last_hidden_state
    at = torch.tensor([len(i) - 2 for i in ids])
    return F.normalize(hidden[torch.arange(len(ids)), at].float(), dim=-1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", default="tiny-qwen3")
    ap.add_argument("--labels", choices=("shipped", "retry"), default="retry")
    ap.add_argument("--bare-weight", type=float, default=1.0)
    ap.add_argument("--svf-fit", action="store_true")
    ap.add_argument("--svf-l2", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--splits", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(0)
    qs = practice_questions()
    router = build_router(load_config(None, {"encoder": args.encoder, "device": "cpu"}), 3)
    texts, shipped = warmstart.role_transcripts(router_text(None), qs, ["a", "b", "c"])
    n = len(shipped) // len(STATES)
    state = np.tile(np.arange(len(STATES)), n)
    y = shipped if args.labels == "shipped" else np.where(np.isin(state, [0, 2, 4]), WORKER, VERIFIER)
    ids = router.token_ids(texts)
    with torch.no_grad():
        X = svf_features(router, ids, torch.ones(router.svf_size)).double().numpy()
    rng = np.random.RandomState(0)
    bad = np.zeros(len(STATES))
    tot = np.zeros(len(STATES))
    for _ in range(args.splits):
        perm = rng.permutation(n)
        rows = [np.arange(i * len(STATES), (i + 1) * len(STATES)) for i in perm]
        tr, te = np.concatenate(rows[:30]), np.concatenate(rows[30:])
        counts = np.bincount(y[tr], minlength=len(ROLES)).astype(np.float64)
        cw = np.where(counts > 0, counts.sum() / np.maximum(counts, 1), 0.0)
        cw[WORKER] *= args.bare_weight
        R0 = warmstart.fit_softmax(X[tr], y[tr], cw, warmstart.ROLE_LAMBDA)
        if args.svf_fit:
            z = torch.ones(router.svf_size, requires_grad=True)
            R = torch.tensor(R0, dtype=torch.float32, requires_grad=True)
            opt = torch.optim.Adam([z, R], lr=0.02)
            w, yt = torch.as_tensor(cw, dtype=torch.float32), torch.as_tensor(y[tr])
            tr_ids = [ids[i] for i in tr]
            for _ in range(args.steps):
                opt.zero_grad()
                loss = (
                    F.cross_entropy(svf_features(router, tr_ids, z) @ R.T, yt, weight=w)
                    + warmstart.ROLE_LAMBDA * (R**2).sum()
                    + args.svf_l2 * ((z - 1) ** 2).sum()
                )
                loss.backward()
                opt.step()
            with torch.no_grad():
                pick = torch.argmax(svf_features(router, [ids[i] for i in te], z) @ R.T, dim=1).numpy()
        else:
            pick = np.argmax(X[te] @ R0.T, axis=1)
        for s in range(len(STATES)):
            m = state[te] == s
            bad[s] += np.sum(pick[m] != y[te][m])
            tot[s] += m.sum()
    rates = ", ".join(f"{name} {b / t:.3f}" for name, b, t in zip(STATES, bad, tot))
    print(
        f"{args.encoder}, labels {args.labels}, bare weight {args.bare_weight:g}"
        f"{', SVF fitted (l2 %g)' % args.svf_l2 if args.svf_fit else ''}: held-out wrong role by state: {rates}"
    )


if __name__ == "__main__":
    main()
