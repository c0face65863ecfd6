"""`trinity m1 train` / `resume`: a Milestone-1 head in an ordinary run directory.

runs/<id>/
  run.json          mode "m1", competition "tinyrouter-m1", the resolved config, status
  events.jsonl      a `generation` event per epoch (best = best validation composite so far,
                    val_acc = this epoch's validation composite, plus loss and both accuracies)
                    and a `log` line per epoch, as every run has
  features/         the encoder's features, computed once (never commit them)
  checkpoint/state.npz   current + best weights, epoch, early-stopping streak, history
  head.npz          the best weights (W_domain, W_diff[, attention_query]) — what `m1 pack` reads
  history.json, summary.json
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trinity.benchmarks.tinyrouter_m1 import M1Row, load_m1
from trinity.competition import m1
from trinity.errors import CheckpointError, InputError
from trinity.io import atomic_write_json
from trinity.m1 import fit
from trinity.m1.features import Features, features
from trinity.runs.records import M1EpochRecord, M1Summary, RunMeta, parse_m1_history, read_m1_summary
from trinity.runs.rundir import RunDir, new_run_id, utc_now_iso

MODE = "m1"
OPTIMIZERS = ("lbfgs", "sep-cma-es")


@dataclass(frozen=True)
class TrainConfig:
    m1_config: str = "5-domain"
    pool: str = "penultimate"
    encoder: str = m1.ENCODER
    encoder_seed: int = 0
    device: str | None = None
    dtype: str | None = None
    seed: int = 0
    val_fraction: float = 0.2
    l2: float = 1e-4
    iters: int = 20
    epochs: int = 30
    patience: int = 5
    class_weights: bool = False
    train_data: str | None = None
    test_data: str | None = None
    limit: int | None = None
    feature_cache: str | None = None  # a folder shared by runs (default: the run's features/)
    optimizer: str = "lbfgs"  # lbfgs | sep-cma-es (derivative-free, as the main track's trainer)
    popsize: int = 16  # sep-cma-es: candidates a generation (--iters: generations an epoch)
    sigma0: float = 0.5

    def check(self) -> None:
        m1.canonical_config(self.m1_config)
        if self.pool not in m1.POOLS:
            raise InputError(f"--pool must be penultimate or attentive, got {self.pool!r}")
        if not 0.0 < self.val_fraction < 1.0:
            raise InputError(f"--val-fraction must be between 0 and 1, got {self.val_fraction}")
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")
        if self.optimizer == "sep-cma-es" and self.pool != "penultimate":
            raise InputError("--optimizer sep-cma-es fits penultimate heads; use lbfgs for --pool attentive")
        if self.popsize < 2 or self.sigma0 <= 0:
            raise InputError("--popsize must be >= 2 and --sigma0 > 0")
        if self.l2 < 0 or self.iters < 1 or self.epochs < 1 or self.patience < 1:
            raise InputError("--l2 must be >= 0 and --iters, --epochs, --patience >= 1")

    @classmethod
    def of_run(cls, meta: RunMeta, where: str | Path) -> TrainConfig:
        """The config a Milestone-1 run was created with (run.json's `config`); InputError for a
        run that is not a Milestone-1 run."""
        if meta.mode != MODE:
            raise InputError(f"{where} is not a Milestone-1 run (mode {meta.mode!r})")
        names = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in meta.config.to_json().items() if k in names})
        except TypeError as e:
            raise InputError(f"{where}: run.json's config is not a Milestone-1 config ({e})") from None


def split_indices(n: int, seed: int, val_fraction: float) -> tuple[list[int], list[int]]:
    """A seeded validation split of the train rows (the test split is never seen in training):
    (train indices, validation indices), each in row order."""
    if n < 2:
        raise InputError(f"need at least 2 training rows, got {n}")
    perm = np.random.default_rng(seed).permutation(n)
    n_val = min(n - 1, max(1, int(round(n * val_fraction))))
    val = set(perm[:n_val].tolist())
    return [i for i in range(n) if i not in val], [i for i in range(n) if i in val]


def labels(rows: list[M1Row], config: str) -> tuple[np.ndarray, np.ndarray]:
    idx = {d: i for i, d in enumerate(m1.domains_of(config))}
    return np.array([idx[r.domain] for r in rows]), np.array([r.difficulty - 1 for r in rows])


def load_encoder_for(cfg: TrainConfig) -> Any:
    from trinity.model.encoder import load_encoder  # lazy: transformers + huggingface_hub loaded only when used

    return load_encoder(cfg.encoder, cfg.device, cfg.dtype, seed=cfg.encoder_seed)


def split_features(rd: RunDir, cfg: TrainConfig, encoder: Any, rows: list[M1Row], pool: str | None = None) -> Features:
    cache = cfg.feature_cache or rd.path / "features"
    return features(encoder, cfg.encoder_seed, [r.prompt for r in rows], pool or cfg.pool, cache)


# ---- checkpoint -------------------------------------------------------------------------------


def _ckpt(rd: RunDir) -> Path:
    return rd.checkpoint_dir / "state.npz"


def save_state(rd: RunDir, st: fit.FitState) -> None:
    arrays: dict[str, np.ndarray] = {}
    for tag, w in (("cur", st.current), ("best", st.best)):
        for k, v in w.arrays().items():
            arrays[f"{tag}_{k}"] = v
    meta = {k: getattr(st, k) for k in ("epoch", "best_val", "best_epoch", "bad", "done", "history")}
    arrays["state"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    rd.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    tmp = rd.checkpoint_dir / "state.tmp.npz"
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(_ckpt(rd))


def load_state(rd: RunDir) -> fit.FitState:
    path = _ckpt(rd)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["state"]).decode())

            def w(tag: str) -> fit.Weights:
                q = z[f"{tag}_attention_query"] if f"{tag}_attention_query" in z.files else None
                return fit.Weights(z[f"{tag}_W_domain"], z[f"{tag}_W_diff"], q)

            cur, best = w("cur"), w("best")
    except FileNotFoundError:
        raise CheckpointError(f"{rd.path} has no checkpoint yet; start it again with `trinity m1 train`") from None
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable checkpoint ({type(e).__name__}); train a new run") from None
    return fit.FitState(cur, best, **meta)


# ---- the run ----------------------------------------------------------------------------------


def create_run(cfg: TrainConfig, runs_root: str | Path, run_dir: str | Path | None = None) -> RunDir:
    cfg.check()
    rd = RunDir(run_dir) if run_dir else RunDir(Path(runs_root) / new_run_id("m1"))
    if rd.exists():
        raise InputError(f"{rd.path} already holds a run; resume it with `trinity m1 resume {rd.path}`")
    load_m1(cfg.m1_config, "train", cfg.train_data, cfg.limit)  # bad data: one line, no run directory left
    rd.path.mkdir(parents=True, exist_ok=True)
    conf = dict(cfg.__dict__)
    conf["m1_config"] = m1.canonical_config(cfg.m1_config)
    conf["generations"] = cfg.epochs  # the app's progress column
    rd.write_meta(
        RunMeta.model_validate(
            {
                "id": rd.id,
                "created": utc_now_iso(),
                "status": "created",
                "mode": MODE,
                "competition": m1.NAME,
                "benchmark": "tinyrouter_m1",  # an extra field of run.json (RunMeta names `benchmarks`)
                "pool": "offline",
                "config": conf,
            }
        )
    )
    return rd


def run_training(rd: RunDir, resume: bool = False, stop_after: int | None = None) -> M1Summary:
    """Train (or continue) the run in `rd`; returns the summary. `stop_after`: stop after that
    many epochs of this call (tests of resume)."""
    cfg = TrainConfig.of_run(rd.meta(), rd.path)
    with rd.lock():
        rd.set_status("running", "resumed" if resume else "")
        try:
            summary = _train(rd, cfg, resume, stop_after)
        except BaseException as e:
            rd.set_status("failed" if not isinstance(e, KeyboardInterrupt) else "stopped", str(e)[:200])
            raise
        rd.set_status(summary.status, summary.message)
    return summary


def _train(rd: RunDir, cfg: TrainConfig, resume: bool, stop_after: int | None) -> M1Summary:
    torch.manual_seed(cfg.seed)
    config = cfg.m1_config
    rows = load_m1(config, "train", cfg.train_data, cfg.limit)
    tr_idx, va_idx = split_indices(len(rows), cfg.seed, cfg.val_fraction)
    tr_rows, va_rows = [rows[i] for i in tr_idx], [rows[i] for i in va_idx]
    encoder = load_encoder_for(cfg)
    t0 = time.perf_counter()
    f_all = split_features(rd, cfg, encoder, rows)  # the whole train split: one cache for every seed
    f_tr, f_va = f_all.subset(tr_idx), f_all.subset(va_idx)
    feat_secs = time.perf_counter() - t0
    cached = f_all.cached
    rd.log(
        f"features: {len(tr_rows)} train + {len(va_rows)} val prompts in {feat_secs:.1f} s"
        + (" (cache)" if cached else "")
    )
    train = fit.Data.of(f_tr, *labels(tr_rows, config))
    val = fit.Data.of(f_va, *labels(va_rows, config))
    d_h = encoder.hidden_size
    n_dom = len(m1.domains_of(config))
    cw_dom = cw_diff = None
    if cfg.class_weights:
        cw_dom = fit.class_weights(train.y_dom.numpy(), n_dom)
        cw_diff = fit.class_weights(train.y_diff.numpy(), m1.N_DIFFICULTY)
    if resume and _ckpt(rd).exists():
        st = load_state(rd)
    else:
        z = fit.zeros(n_dom, d_h, cfg.pool == "attentive")
        st = fit.FitState(z, z)
    fit_secs = 0.0
    n_this = 0
    while not st.done and st.epoch < cfg.epochs:
        if stop_after is not None and n_this >= stop_after:
            break
        e0 = time.perf_counter()
        if cfg.optimizer == "sep-cma-es":
            ep = fit.cma_epoch_step(st, train, val, cfg.l2, cfg.iters, cfg.patience, cfg.popsize, cfg.sigma0, cfg.seed)
        else:
            ep = fit.epoch_step(st, train, val, cfg.l2, cfg.iters, cfg.patience, cw_dom, cw_diff)
        secs = time.perf_counter() - e0
        fit_secs += secs
        n_this += 1
        save_state(rd, st)
        rd.append_event(
            "generation",
            gen=ep.epoch,
            best=st.best_val,
            mean=ep.val["composite"],
            max=ep.train["composite"],
            evals=len(tr_rows),
            cost_usd=0.0,
            secs=round(secs, 4),
            val_acc=ep.val["composite"],
            loss=ep.loss,
            train_domain_acc=ep.train["domain_acc"],
            train_difficulty_exact=ep.train["difficulty_exact"],
            val_domain_acc=ep.val["domain_acc"],
            val_difficulty_exact=ep.val["difficulty_exact"],
        )
        rd.log(
            f"epoch {ep.epoch}: loss {ep.loss:.4f} · train domain {ep.train['domain_acc']:.3f} difficulty "
            f"{ep.train['difficulty_exact']:.3f} · val domain {ep.val['domain_acc']:.3f} difficulty "
            f"{ep.val['difficulty_exact']:.3f} · composite {ep.val['composite']:.4f}" + (" *" if ep.improved else "")
        )
    finished = st.done or st.epoch >= cfg.epochs
    best = st.best
    np.savez(rd.path / "head.npz", **{k: v.astype(np.float32) for k, v in best.arrays().items()})  # type: ignore[arg-type]
    history: list[M1EpochRecord] = parse_m1_history(st.history, str(rd.history))
    atomic_write_json(rd.history, [r.to_json() for r in history])
    prev_fit = read_m1_summary(rd.summary).fit_seconds if resume and rd.summary.exists() else 0.0
    summary = M1Summary(
        mode=MODE,
        competition=m1.NAME,
        m1_config=config,
        pool=cfg.pool,
        epochs=st.epoch,
        best_epoch=st.best_epoch,
        best_val_composite=st.best_val,
        early_stopped=bool(st.done),
        n_train=len(tr_rows),
        n_val=len(va_rows),
        d_h=d_h,
        n_params=int(best.W_domain.size + best.W_diff.size + (best.query.size if best.query is not None else 0)),
        feature_seconds=round(feat_secs, 3),
        features_cached=cached,
        fit_seconds=round(fit_secs + prev_fit, 3),
        status="finished" if finished else "stopped",
        message=(
            f"best validation composite {st.best_val:.4f} at epoch {st.best_epoch}"
            + (" (early stop)" if st.done else "")
            if finished
            else f"stopped after epoch {st.epoch}; continue with `trinity m1 resume {rd.path}`"
        ),
    )
    atomic_write_json(rd.summary, summary.to_json())
    return summary


def best_weights(rd: RunDir) -> fit.Weights:
    path = rd.path / "head.npz"
    if not path.is_file():
        raise InputError(f"{rd.path} has no head.npz yet; train it with `trinity m1 train`")
    with np.load(path, allow_pickle=False) as z:
        q = z["attention_query"] if "attention_query" in z.files else None
        return fit.Weights(z["W_domain"], z["W_diff"], q)


def pack_of_run(rd: RunDir, miner: str | None = None) -> m1.M1Pack:
    meta = rd.meta()
    if meta.mode != MODE:
        raise InputError(f"{rd.path} is not a Milestone-1 run; `trinity m1 pack` packs `trinity m1 train` runs")
    cfg = TrainConfig.of_run(meta, rd.path)
    w = best_weights(rd)
    info: dict[str, Any] = {"run": rd.id, "encoder": cfg.encoder}
    if miner:
        info["miner"] = miner
    return m1.M1Pack(
        config=cfg.m1_config,
        pool=cfg.pool,
        d_h=int(w.W_domain.shape[1]),
        W_domain=w.W_domain.astype(np.float32),
        W_diff=w.W_diff.astype(np.float32),
        attention_query=None if w.query is None else w.query.astype(np.float32),
        meta=info,
    )
