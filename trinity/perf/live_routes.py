"""Where a run of `trinity bench learning --live` (kept with `--keep DIR`) routes, and what its
routes are worth in expectation against the skilled stand-in pool.

The bench's held-out accuracy is one sampled session per question (21 questions at its size: one
question moves it by 0.048). This reads the stand-in's own chance of a right Worker answer for
each (model, question) instead and reports, per split, the expected turn-1 accuracy of the model
the router picks on a bare query, the held-out routes per topic, and the expected per-topic
ceiling. `--refit question|group` scores the label warm start refitted on the run's collected
matrix with those targets (the same code as a run's generation 0) instead of the run's chosen θ:
a paired comparison of the two label fits on the same labels, free (no call is made).
`--per-group-sweep 3,4,5,0` refits the group-target fit on only N of the collected training
questions of each topic (drawn as `trinity collect --per-group N` draws; 0: all), the others given
their topic's mean: what a smaller collect would have routed, from one full collect.

    python -m trinity.perf.live_routes DIR/run-new [--refit group] [--refit question] [--per-group-sweep 3,4,5,0]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from trinity.analysis.stats import paired_bootstrap_ci
from trinity.competition.text import router_text
from trinity.config import TrainConfig
from trinity.data.matrix import load_matrix
from trinity.data.questions import load_questions, pick_per_group, question_group
from trinity.optim.fitness import build_router
from trinity.optim.warmstart import warm_start_theta
from trinity.perf.standin import STANDIN_MODELS, Standin


def routes(
    run_dir: Path, refit: str | None = None, router: Any = None, per_group: int = 0
) -> tuple[dict[str, Any], Any]:
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    cfg = meta["config"]
    qs = load_questions(cfg["questions"])
    by_id = {q.id: q for q in qs}
    models = [m.id for m in STANDIN_MODELS]
    if meta["models"] != models:
        raise SystemExit(f"{run_dir}: not a run against the stand-in pool")
    if router is None:
        router = build_router(TrainConfig(**{k: v for k, v in cfg.items() if k in TrainConfig.model_fields}), 3)
    standin = Standin(qs, seed=cfg["seed"])
    text = router_text(meta["competition"]).question_input
    if refit is None:
        theta = np.load(run_dir / "best_theta.npy")
    else:
        if not cfg.get("matrix"):
            raise SystemExit(f"{run_dir}: no collected matrix to refit on")
        mat = load_matrix(cfg["matrix"], ragged="keep")
        train = [by_id[i] for i in meta["splits"]["train"]]
        have = [q for q in train if q.id in mat]
        keep = {q.id for q in (pick_per_group(have, per_group, cfg["seed"]) if per_group else have)}
        labelled = np.array([q.id in keep for q in train], dtype=bool)
        acc = np.full((len(train), len(models)), np.nan)
        acc[labelled] = mat.accuracy()[[mat.row(q.id) for q in train if q.id in keep]]
        theta, _ = warm_start_theta(
            router,
            router.initial_mean(),
            len(models),
            [text(q) for q in train],
            acc,
            seed=cfg["seed"],
            groups=[question_group(q) for q in train],
            k=mat.k,
            label_targets=refit,
            labelled=labelled,
        )
    out: dict[str, Any] = {"run": str(run_dir), "theta": refit or "chosen"}
    if per_group:
        out["per_group"] = per_group
    for split in ("train", "val", "test"):
        qq = [by_id[i] for i in meta["splits"][split]]
        logits = np.asarray(router.population_logits(theta[None, :], [text(q) for q in qq])[0])[:, : len(models)]
        pick = np.argmax(logits, axis=1)
        p = np.array([[standin.p_correct(m, q) for m in models] for q in qq])
        routed = p[np.arange(len(qq)), pick]  # (Q,) each question's chance under the router's pick
        out[f"{split}_expected_acc"] = round(float(routed.mean()), 4)
        if split == "test":
            kinds = np.array([q.kind for q in qq])
            ceiling = sum(float(p[kinds == k].mean(axis=0).max()) * int(np.sum(kinds == k)) for k in set(kinds))
            out["test_expected_ceiling"] = round(ceiling / len(qq), 4)
            out["test_expected_share_of_ceiling"] = round(float(routed.mean()) / (ceiling / len(qq)), 4)
            # the same held-out questions, each scored by its chance of a right answer instead of one
            # draw: a paired CI against the best single model free of the draws' noise
            best = int(np.argmax(p.mean(axis=0)))
            out["test_best_single"] = {"model": models[best], "expected_acc": round(float(p[:, best].mean()), 4)}
            out["test_ci_vs_best_single"] = paired_bootstrap_ci(routed, p[:, best]).to_json()
            # per question (the split's order), so several seeds' figures can be pooled
            out["test_per_question"] = {
                "ids": [q.id for q in qq],
                "kinds": kinds.tolist(),
                "routed": [round(float(v), 6) for v in routed],
                "best_single": [round(float(v), 6) for v in p[:, best]],
            }
            out["test_routes"] = {
                str(k): dict(zip(models, np.bincount(pick[kinds == k], minlength=len(models)).tolist()))
                for k in sorted(set(kinds))
            }
    return out, router


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dirs", nargs="+", type=Path)
    ap.add_argument("--refit", action="append", choices=["question", "group"], default=[])
    ap.add_argument(
        "--per-group-sweep",
        default=None,
        metavar="N,N,...",
        help="refit the group-target fit on N collected training questions per topic, for each N (0: all)",
    )
    args = ap.parse_args(argv)
    sweep: list[int] = []
    if args.per_group_sweep is not None:
        try:
            sweep = [int(x) for x in args.per_group_sweep.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--per-group-sweep {args.per_group_sweep!r}: give comma-separated counts, e.g. 3,4,5,0")
        if not sweep or min(sweep) < 0:
            ap.error("--per-group-sweep: counts >= 0 (0: every collected training question)")
    router = None
    for rd in args.run_dirs:
        for refit in [None, *args.refit]:
            res, router = routes(rd, refit, router)
            print(json.dumps(res), flush=True)
        for n in sweep:
            res, router = routes(rd, "group", router, per_group=n)
            print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
