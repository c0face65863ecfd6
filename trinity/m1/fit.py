"""The supervised Milestone-1 head: full-batch softmax regression with L2 (torch LBFGS).

loss = CE(domain) + CE(difficulty) + l2/2 · (|W_domain|² + |W_diff|² [+ |q|²])

Training runs in epochs; each epoch is one fresh LBFGS call of `iters` iterations from the
current weights, then the validation composite. The best epoch's weights are kept and training
stops after `patience` epochs without a better validation composite. Because an epoch starts
from the weights alone, a run resumed from its checkpoint takes exactly the steps the
uninterrupted run takes. The attentive variant learns the pool's query jointly with the heads
(`alpha = softmax(H q)`, `h = alpha H / |alpha H|`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from trinity.competition import m1
from trinity.model.lbfgs import lbfgs
from trinity.optim.trainer import make_es

SMALL_PROBLEM = 4_000_000  # rows × feature width under which the fit runs on one thread


@dataclass
class Weights:
    W_domain: np.ndarray  # (C, d_h) float64
    W_diff: np.ndarray  # (5, d_h)
    query: np.ndarray | None = None  # (d_h,) attentive only

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"W_domain": self.W_domain, "W_diff": self.W_diff}
        if self.query is not None:
            out["attention_query"] = self.query
        return out


def zeros(n_domains: int, d_h: int, attentive: bool) -> Weights:
    """Their zero init: uniform over domains and difficulties (and a mean-pool start)."""
    return Weights(np.zeros((n_domains, d_h)), np.zeros((m1.N_DIFFICULTY, d_h)), np.zeros(d_h) if attentive else None)


@dataclass
class Data:
    """One split as tensors: penultimate `X (N, d)`, or attentive `H (N, K, d)` + `mask (N, K)`."""

    y_dom: torch.Tensor
    y_diff: torch.Tensor  # 0-based
    X: torch.Tensor | None = None
    H: torch.Tensor | None = None
    mask: torch.Tensor | None = None

    @staticmethod
    def of(feats: Any, y_dom: np.ndarray, y_diff: np.ndarray) -> "Data":
        yd = torch.as_tensor(np.asarray(y_dom), dtype=torch.long)
        yf = torch.as_tensor(np.asarray(y_diff), dtype=torch.long)
        if feats.X is not None:
            return Data(yd, yf, X=torch.as_tensor(feats.X, dtype=torch.float64))
        seqs = feats.seqs
        K = max(len(s) for s in seqs)
        d = seqs[0].shape[1]
        H = torch.zeros((len(seqs), K, d), dtype=torch.float64)
        mask = torch.zeros((len(seqs), K), dtype=torch.bool)
        for i, s in enumerate(seqs):
            H[i, : len(s)] = torch.as_tensor(s, dtype=torch.float64)
            mask[i, : len(s)] = True
        return Data(yd, yf, H=H, mask=mask)

    def hidden(self, q: torch.Tensor | None) -> torch.Tensor:
        if self.X is not None:
            return self.X
        assert self.H is not None and self.mask is not None and q is not None
        s = (self.H @ q).masked_fill(~self.mask, torch.finfo(torch.float64).min)
        a = torch.softmax(s, dim=-1)
        return F.normalize(torch.einsum("nk,nkd->nd", a, self.H), dim=-1)


@dataclass
class Epoch:
    epoch: int
    loss: float
    train: dict[str, float]
    val: dict[str, float]
    improved: bool


def _metrics(w_dom: torch.Tensor, w_diff: torch.Tensor, q: torch.Tensor | None, data: Data) -> dict[str, float]:
    with torch.no_grad():
        h = data.hidden(q)
        pd = torch.argmax(h @ w_dom.T, dim=1)
        pf = torch.argmax(h @ w_diff.T, dim=1)
        dom = float((pd == data.y_dom).double().mean())
        dif = float((pf == data.y_diff).double().mean())
    return {
        "domain_acc": dom,
        "difficulty_exact": dif,
        "composite": m1.DOMAIN_WEIGHT * dom + (1 - m1.DOMAIN_WEIGHT) * dif,
    }


@dataclass
class FitState:
    """What a checkpoint holds: the current and the best weights, the epoch count, the streak."""

    current: Weights
    best: Weights
    epoch: int = 0
    best_val: float = -1.0
    best_epoch: int = 0
    bad: int = 0
    done: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)


def class_weights(y: np.ndarray, n: int) -> torch.Tensor:
    counts = np.bincount(np.asarray(y), minlength=n).astype(np.float64)
    w = np.where(counts > 0, counts.sum() / (n * np.maximum(counts, 1)), 0.0)
    return torch.as_tensor(w, dtype=torch.float64)


def epoch_step(
    state: FitState,
    train: Data,
    val: Data,
    l2: float,
    iters: int,
    patience: int,
    weights_dom: torch.Tensor | None = None,
    weights_diff: torch.Tensor | None = None,
) -> Epoch:
    """One epoch: LBFGS from `state.current`, then validation; updates `state` in place."""
    cur = state.current
    wd = torch.tensor(cur.W_domain, dtype=torch.float64, requires_grad=True)
    wf = torch.tensor(cur.W_diff, dtype=torch.float64, requires_grad=True)
    q = torch.tensor(cur.query, dtype=torch.float64, requires_grad=True) if cur.query is not None else None
    params = [wd, wf] + ([q] if q is not None else [])
    opt = lbfgs(params, lr=1.0, max_iter=iters, history_size=10, line_search_fn="strong_wolfe")

    def objective() -> torch.Tensor:
        h = train.hidden(q)
        loss = F.cross_entropy(h @ wd.T, train.y_dom, weight=weights_dom) + F.cross_entropy(
            h @ wf.T, train.y_diff, weight=weights_diff
        )
        return loss + 0.5 * l2 * sum((p * p).sum() for p in params)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    prev = torch.get_num_threads()
    small = train.y_dom.numel() * cur.W_domain.shape[1] < SMALL_PROBLEM
    if small:  # tiny matmuls: thread hand-offs cost more than the work (10× on a loaded box)
        torch.set_num_threads(1)
    try:
        opt.step(closure)
    finally:
        torch.set_num_threads(prev)
    with torch.no_grad():
        loss = float(objective())
    state.epoch += 1
    state.current = Weights(
        wd.detach().numpy().copy(), wf.detach().numpy().copy(), q.detach().numpy().copy() if q is not None else None
    )
    tr = _metrics(wd, wf, q, train)
    va = _metrics(wd, wf, q, val)
    improved = va["composite"] > state.best_val
    if improved:
        state.best, state.best_val, state.best_epoch, state.bad = state.current, va["composite"], state.epoch, 0
    else:
        state.bad += 1
        state.done = state.bad >= patience
    ep = Epoch(state.epoch, loss, tr, va, improved)
    state.history.append(
        {
            "epoch": ep.epoch,
            "loss": loss,
            **{f"train_{k}": v for k, v in tr.items()},
            **{f"val_{k}": v for k, v in va.items()},
        }
    )
    return ep


def _np_loss(theta: np.ndarray, X: np.ndarray, yd: np.ndarray, yf: np.ndarray, n_dom: int, l2: float) -> float:
    d = X.shape[1]
    Wd, Wf = theta[: n_dom * d].reshape(n_dom, d), theta[n_dom * d :].reshape(-1, d)
    total = 0.5 * l2 * float(theta @ theta)
    for W, y in ((Wd, yd), (Wf, yf)):
        z = X @ W.T
        z = z - z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=1))
        total += float(np.mean(lse - z[np.arange(len(y)), y]))
    return total


def cma_epoch_step(
    state: FitState,
    train: Data,
    val: Data,
    l2: float,
    generations: int,
    patience: int,
    popsize: int,
    sigma0: float,
    seed: int,
) -> Epoch:
    """One epoch of the derivative-free option (parity with the main track's trainer): the
    separable CMA-ES of `trinity.optim` for `generations` generations on the training loss, from
    the current weights; the mean is the epoch's weights. Penultimate heads only. Each epoch's
    sampler is seeded by (seed, epoch), so a resumed run takes the same steps."""
    assert train.X is not None and val.X is not None, "sep-CMA-ES fits penultimate heads"
    cur = state.current
    n_dom = cur.W_domain.shape[0]
    x0 = np.concatenate([cur.W_domain.ravel(), cur.W_diff.ravel()])
    rng = np.random.RandomState((seed * 100_003 + state.epoch) % 2**32)
    es = make_es(x0, sigma0, popsize, rng)
    X, yd, yf = train.X.numpy(), train.y_dom.numpy(), train.y_diff.numpy()
    for _ in range(generations):
        cands = es.ask()
        es.tell(cands, [_np_loss(np.asarray(c), X, yd, yf, n_dom, l2) for c in cands])
    mean = np.asarray(es.mean, dtype=np.float64)
    d = cur.W_domain.shape[1]
    wd, wf = mean[: n_dom * d].reshape(n_dom, d), mean[n_dom * d :].reshape(-1, d)
    loss = _np_loss(mean, X, yd, yf, n_dom, l2)
    state.epoch += 1
    state.current = Weights(wd.copy(), wf.copy(), None)
    twd, twf = torch.as_tensor(wd), torch.as_tensor(wf)
    tr, va = _metrics(twd, twf, None, train), _metrics(twd, twf, None, val)
    improved = va["composite"] > state.best_val
    if improved:
        state.best, state.best_val, state.best_epoch, state.bad = state.current, va["composite"], state.epoch, 0
    else:
        state.bad += 1
        state.done = state.bad >= patience
    state.history.append(
        {
            "epoch": state.epoch,
            "loss": loss,
            **{f"train_{k}": v for k, v in tr.items()},
            **{f"val_{k}": v for k, v in va.items()},
        }
    )
    return Epoch(state.epoch, loss, tr, va, improved)
