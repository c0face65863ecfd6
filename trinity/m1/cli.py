"""`trinity m1 train|resume|eval|score|pack|check|submit` — TinyRouter Milestone 1 (prompt triage).

Heavy imports (torch, the encoder) stay inside the commands so the CLI starts fast.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from trinity.competition import m1
from trinity.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("m1", help="TinyRouter Milestone 1: train, evaluate, pack, check and submit a triage head")
    s = p.add_subparsers(dest="m1_command", metavar="SUBCOMMAND")
    s.required = True

    t = s.add_parser("train", help="train a triage head on cached encoder features (LBFGS, early stopping)")
    t.add_argument("--config", default="5-domain", help="5-domain or 20-domain (default 5-domain)")
    t.add_argument("--pool", default="penultimate", choices=m1.POOLS)
    t.add_argument("--encoder", default=m1.ENCODER, help="HF id, local path or tiny-qwen3 / qwen3-0.6b-random")
    t.add_argument("--encoder-seed", type=int, default=0)
    t.add_argument("--device", default=None)
    t.add_argument("--dtype", default=None)
    t.add_argument(
        "--train-data", metavar="FILE", help="local train rows (id|domain|difficulty|prompt); default the Hub"
    )
    t.add_argument("--test-data", metavar="FILE", help="local test rows; default the Hub")
    t.add_argument("--limit", type=int, default=None, help="first N train rows")
    t.add_argument("--seed", type=int, default=0, help="the validation split's seed")
    t.add_argument("--seeds", default=None, help="comma-separated seeds: one run each (e.g. 0,1,2)")
    t.add_argument("--val-fraction", type=float, default=0.2)
    t.add_argument("--l2", type=float, default=1e-4, help="L2 weight on the head (default 1e-4)")
    t.add_argument("--iters", type=int, default=20, help="LBFGS iterations an epoch")
    t.add_argument("--epochs", type=int, default=30)
    t.add_argument("--patience", type=int, default=5, help="epochs without a better validation composite")
    t.add_argument(
        "--optimizer",
        default="lbfgs",
        choices=("lbfgs", "sep-cma-es"),
        help="sep-cma-es: derivative-free, as the main track",
    )
    t.add_argument(
        "--popsize", type=int, default=16, help="sep-cma-es candidates a generation (--iters: generations an epoch)"
    )
    t.add_argument("--sigma0", type=float, default=0.5, help="sep-cma-es initial step size")
    t.add_argument("--class-weights", action="store_true", help="weight classes by inverse frequency")
    t.add_argument(
        "--feature-cache", metavar="DIR", help="share encoder features between runs (default: each run's features/)"
    )
    t.add_argument("--runs-root", default="runs")
    t.add_argument("--run-dir", default=None)
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=_train)

    r = s.add_parser("resume", help="continue an M1 run from its checkpoint")
    r.add_argument("run")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_resume)

    e = s.add_parser("eval", help="score a run's head on the test split, with intervals, baselines and confusion")
    e.add_argument("run")
    e.add_argument("--test-data", metavar="FILE")
    e.add_argument("--export-features", metavar="FILE.npy", help="write the test features (N, d_h) for other tools")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=_eval)

    c = s.add_parser("score", help="challenger vs king on the same test features (+0.02 rule)")
    c.add_argument("run", help="the run whose test features are used (and whose head is the challenger)")
    c.add_argument("--challenger", metavar="PACK", help="score this pack instead of the run's head")
    c.add_argument("--king", metavar="PACK", help="the king's pack (default: no king)")
    c.add_argument("--test-data", metavar="FILE")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_score)

    k = s.add_parser("pack", help="write submissions/<miner>/m1/ from a run's best head")
    k.add_argument("run")
    k.add_argument("--miner", required=True)
    k.add_argument("--root", default=".", help="where submissions/ goes (a clone of their repository)")
    k.add_argument("--out", default=None, help="write the pack folder here instead")
    k.set_defaults(func=_pack)

    g = s.add_parser("check", help="the competition's gates on a pack, in their order")
    g.add_argument("pack")
    g.add_argument("--miner", required=True)
    g.add_argument(
        "--root", default=None, help="repository root with submissions/m1_attempts.jsonl (default: above the pack)"
    )
    g.add_argument("--skip-rate-limit", action="store_true")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=_check)

    b = s.add_parser("submit", help="put a checked pack on a submission branch of a clone of their repository")
    b.add_argument("pack")
    b.add_argument("--miner", required=True)
    b.add_argument("--repo", required=True, help="a local clone of their repository")
    b.add_argument("--dry-run", action="store_true", help="check and print the plan; change nothing")
    b.set_defaults(func=_submit)


def _print(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2) if as_json else text)


def _train(args: argparse.Namespace) -> int:
    from trinity.m1.run import TrainConfig, create_run, run_training  # lazy: torch + pydantic kept off the CLI start

    seeds = [args.seed]
    if args.seeds:
        try:
            seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
        if args.run_dir and len(seeds) > 1:
            raise InputError("--run-dir names one run; with several --seeds use --runs-root")
    out = []
    for seed in seeds:
        cfg = TrainConfig(
            m1_config=args.config,
            pool=args.pool,
            encoder=args.encoder,
            encoder_seed=args.encoder_seed,
            device=args.device,
            dtype=args.dtype,
            seed=seed,
            val_fraction=args.val_fraction,
            l2=args.l2,
            iters=args.iters,
            epochs=args.epochs,
            patience=args.patience,
            class_weights=args.class_weights,
            train_data=args.train_data,
            test_data=args.test_data,
            limit=args.limit,
            feature_cache=args.feature_cache,
            optimizer=args.optimizer,
            popsize=args.popsize,
            sigma0=args.sigma0,
        )
        rd = create_run(cfg, args.runs_root, args.run_dir)
        summary = run_training(rd)
        out.append({"run": str(rd.path), **summary.to_json()})
        if not args.json:
            print(
                f"{rd.path}: {summary.message} · fit {summary.fit_seconds:.1f} s, features {summary.feature_seconds:.1f} s"
            )
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    return 0


def _resume(args: argparse.Namespace) -> int:
    from trinity.m1.run import run_training  # lazy: torch + pydantic kept off the CLI start
    from trinity.runs.rundir import RunDir  # lazy: PyYAML kept off the CLI start

    summary = run_training(RunDir(args.run), resume=True)
    _print(summary.to_json(), args.json, f"{args.run}: {summary.message}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from trinity.m1.evaluate import RunEval  # lazy: torch + pydantic kept off the CLI start

    ev = RunEval(args.run, args.test_data)
    rep = ev.evaluate()
    if args.export_features:
        np.save(args.export_features, ev.X_test.astype(np.float32))
    (ev.rd.path / "m1_eval.json").write_text(json.dumps(rep, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    from trinity.analysis.render import print_view  # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.m1.render import eval_view  # lazy: pydantic + PyYAML kept off the CLI start

    print(f"{ev.rd.id} · {rep['m1_config']} · {rep['pool']} · {rep['n_test']} test prompts (95% bootstrap intervals)")
    print_view(eval_view(rep))
    return 0


def _score(args: argparse.Namespace) -> int:
    from trinity.m1.evaluate import RunEval, clear_probability  # lazy: torch + pydantic kept off the CLI start

    ev = RunEval(args.run, args.test_data)
    chal = ev.head_preds(m1.load_pack(args.challenger) if args.challenger else None)
    y_dom, y_diff = [r.domain for r in ev.test], [r.difficulty for r in ev.test]
    c = m1.score(y_dom, y_diff, chal.domain, chal.difficulty)
    out: dict[str, Any] = {"challenger": c.as_dict(), "king": None, "win_margin": m1.WIN_MARGIN}
    if args.king:
        kp = ev.head_preds(m1.load_pack(args.king))
        k = m1.score(y_dom, y_diff, kp.domain, kp.difficulty)
        out["king"] = k.as_dict()
        out["p_clears_margin"] = clear_probability(chal, kp, ev.test)
    merge, reason = m1.decide(out["king"]["composite"] if out["king"] else None, c.composite)
    out["merge"], out["reason"] = merge, reason
    text = f"challenger composite {c.composite:.4f}"
    if out["king"]:
        text += (
            f" · king {out['king']['composite']:.4f} · P(true gain >= {m1.WIN_MARGIN}) = {out['p_clears_margin']:.3f}"
        )
    text += f"\n{'MERGE' if merge else 'REJECT'}: {reason}"
    _print(out, args.json, text)
    return 0 if merge else 1


def _pack(args: argparse.Namespace) -> int:
    from trinity.m1.run import pack_of_run  # lazy: torch + pydantic kept off the CLI start
    from trinity.runs.rundir import RunDir  # lazy: PyYAML kept off the CLI start

    pack = pack_of_run(RunDir(args.run), args.miner)
    out = Path(args.out) if args.out else m1.submission_dir(args.root, args.miner)
    pack.save(out)
    print(f"{out}: {pack.config} {pack.pool} W_domain {tuple(pack.W_domain.shape)} · {pack.n_params:,} params")
    return 0


def _root_of(pack_dir: Path) -> Path:
    """submissions/<miner>/m1 → the repository root above submissions/ (else the pack's parent)."""
    p = pack_dir.resolve()
    if p.name == "m1" and p.parent.parent.name == "submissions":
        return p.parent.parent.parent
    return p.parent


def _check(args: argparse.Namespace) -> int:
    pack_dir = Path(args.pack)
    pack = m1.load_pack(pack_dir)
    root = Path(args.root) if args.root else _root_of(pack_dir)
    gates = m1.run_gates(pack, args.miner, root, skip_rate_limit=args.skip_rate_limit)
    ok = all(g.ok for g in gates)
    out = {
        "pack": str(pack_dir),
        "miner": args.miner,
        "n_params": pack.n_params,
        "ok": ok,
        "gates": [g.__dict__ for g in gates],
        "win_margin": m1.WIN_MARGIN,
    }
    lines = [f"{pack_dir} · miner {args.miner} · {pack.n_params:,} params"]
    lines += [f"  [{'PASS' if g.ok else 'FAIL'}] {g.name}" + (f" — {g.detail}" if g.detail else "") for g in gates]
    lines.append("OK — ready to evaluate / submit" if ok else "REJECTED")
    lines.append(f"merge rule: composite >= king + {m1.WIN_MARGIN} on their fixed test split")
    _print(out, args.json, "\n".join(lines))
    return 0 if ok else 1


def _git(repo: Path, *a: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), *a], capture_output=True, text=True)
    if r.returncode != 0:
        raise InputError(f"git {' '.join(a)} failed in {repo}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return r.stdout.strip()


def _submit(args: argparse.Namespace) -> int:
    repo, src = Path(args.repo), Path(args.pack)
    if not (repo / ".git").exists():
        raise InputError(f"{repo} is not a git clone of {m1.REPOSITORY}; clone it first")
    pack = m1.load_pack(src)
    gates = m1.run_gates(pack, args.miner, repo)
    for g in gates:
        print(f"  [{'PASS' if g.ok else 'FAIL'}] {g.name}" + (f" — {g.detail}" if g.detail else ""))
    if not all(g.ok for g in gates):
        raise InputError("the pack fails the competition's gates; fix it before submitting")
    branch = m1.PROFILE.branch(args.miner, pack.config)
    title = m1.PROFILE.pr_title(args.miner, pack.config, pack.pool)
    dest = m1.submission_dir(repo, args.miner)
    print(f"branch {branch}\ntitle  {title}\nfiles  {dest.relative_to(repo)}/")
    if args.dry_run:
        return 0
    if _git(repo, "status", "--porcelain"):
        raise InputError(f"{repo} has uncommitted changes; commit or stash them first")
    _git(repo, "checkout", "-B", branch)
    if src.resolve() != dest.resolve():
        if dest.exists():
            shutil.rmtree(dest)
        pack.save(dest)
    _git(repo, "add", str(dest.relative_to(repo)))
    _git(repo, "commit", "-m", title)
    print(f"committed on {branch}; push it and open a PR titled {title!r}:\n  git -C {repo} push -u origin {branch}")
    return 0
