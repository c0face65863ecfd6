"""`trinity bench learning --live`: accuracy per dollar of the old and the new live recipe, side
by side, against the skilled stand-in pool (`trinity.perf.standin`) over loopback HTTP.

- old: every candidate on every question (`--live-recipe plain`), the role-rows warm start, live
  validation — live training as it was;
- new (the default recipe): collect k turn-1 answers per model for `--collect-per-group` training
  questions of each topic (default 8; 0: every train + val question; the test split is evaluated
  live), one call each; warm-start the head from those labels (a live run's default on a collected
  matrix: each topic fitted to its best model by the labels' means), evaluate that warm start alone (generation 0: the collect's $ only), then
  race the ES (common random numbers, successive halving, the incumbent re-evaluated); validation
  reads the collected matrix (a val question without a row: its topic's mean).

Same questions, splits and seeds for both; each recipe gets its own stand-in server (the same seed:
the same answers) and its own empty response cache, so the server's own count is that recipe's
spend. Training stops at each `--eval-every` generations for a live evaluation of the run's chosen
θ on the held-out test split; the evaluation's calls are counted apart (before/after at the server)
and are not part of the curve's $. Reported: held-out accuracy against cumulative $ for both, the
$ each needed to reach the old recipe's final accuracy (and the new recipe's as a share of that and
of the old recipe's total), the pool's per-topic ceiling and best single
model on those questions (one Worker turn each, measured by the same evaluation), average turns,
and paired bootstrap CIs (new − old, new − best single); and each recipe's held-out routes scored by
the stand-in's own chances of a right answer (`trinity.perf.live_routes`: no draw noise), with a
paired CI against the best single model scored the same way.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.config import DEFAULT_LABEL_TARGETS, LABEL_TARGETS, RECIPE_PER_GROUP, load_config
from trinity.data.questions import pick_per_group
from trinity.errors import InputError, TrinityError
from trinity.io import read_jsonl
from trinity.model import ROLES
from trinity.optim.runinputs import inputs_from_config
from trinity.pool.providers import Price, load_pool
from trinity.runs.rundir import RunDir


def register_args(p) -> None:
    g = p.add_argument_group("live (--live): old vs new recipe against the stand-in pool")
    g.add_argument("--eval-every", type=int, default=2, help="live: evaluate held-out accuracy every N generations")
    g.add_argument(
        "--collect-k",
        type=int,
        default=1,
        help="live: turn-1 answers per model and question the new recipe collects (default 1: the warm "
        "start's labels average over the questions of a topic, so one draw each shows a model's edge)",
    )
    g.add_argument(
        "--collect-max-k",
        type=int,
        default=None,
        metavar="K",
        help="live: then up to K answers a cell from a topic's two best models while their labels are close "
        "(`trinity collect --max-k`, e.g. 4; default: --collect-k, no second round, as the recipe)",
    )
    g.add_argument(
        "--collect-per-group",
        type=int,
        default=RECIPE_PER_GROUP,
        metavar="N",
        help=f"live: the new recipe collects N training questions of each topic (default {RECIPE_PER_GROUP}); "
        "the warm start "
        "gives the others, and validation's questions, their topic's mean; 0: every train + val question",
    )
    g.add_argument(
        "--label-targets",
        dest="label_targets",
        choices=LABEL_TARGETS,
        default=None,
        help=f"live: the new recipe's warm-start targets (default: train's default, {DEFAULT_LABEL_TARGETS})",
    )
    g.add_argument(
        "--collect-all",
        action="store_true",
        help="live: the new recipe collects the test split too (default: only train + val, which training reads)",
    )
    g.add_argument(
        "--topics",
        default="math,mc,code",
        help="live: which practice topics (kinds) to use, of math,mc,code (default all three)",
    )
    g.add_argument("--per-topic", type=int, default=None, help="live: questions per topic (default all 20)")
    g.add_argument(
        "--splits",
        default="0.5,0.15,0.35",
        help="live: train,val,test shares of the questions (default 0.5,0.15,0.35: a larger held-out set)",
    )
    g.add_argument("--seed", type=int, default=0, help="live: the run and stand-in seed (default 0)")
    g.add_argument(
        "--patience",
        type=int,
        default=None,
        metavar="N",
        help="live: the new recipe's run stops once its chosen θ stood unbeaten for N generations (default: off)",
    )
    g.add_argument("--keep", default=None, metavar="DIR", help="live: keep the run directories in DIR")
    g.add_argument("--plot", default=None, metavar="FILE.png", help="live: write accuracy against $ as a PNG")


def _questions(topics: list[str], per_topic: int | None = None):
    out = []
    for t in topics:
        out += [q for q in practice_questions() if q.kind == t][:per_topic]
    return out


def _stage_gens(total: int, every: int) -> list[int]:
    gens = list(range(every, total, every)) + [total]
    return sorted(set(gens))


def _evaluate(run_dir: Path, base_url: str):
    # lazy: live evaluation (the ledger, sqlite3, the code sandbox: 32 modules) kept off the CLI start
    from trinity.analysis.live import evaluate_live

    return evaluate_live(RunDir(run_dir), split="test", samples=1, pool=None, base_url=base_url)


def ledger_usd(path: Path, skip_eval: bool = True) -> float:
    """The $ a ledger file records (its training and collect calls; evaluation calls left out)."""
    if not path.exists():
        return 0.0
    micro = sum(
        int(r.get("cost_micro_usd") or 0) for r in read_jsonl(path) if not (skip_eval and r.get("purpose") == "eval")
    )
    return micro / 1e6


def run_recipe(name: str, args, qfile: Path, questions, work: Path) -> dict[str, Any]:
    # lazy: the trainer (the ledger, sqlite3, the code sandbox: 38 modules) kept off the CLI start
    from trinity.optim.engine import resume_run, start_run

    # lazy: http.server + http.client (10 modules, ~8 ms) kept off the CLI start
    from trinity.perf.standin import pool_overrides, start_standin

    srv = start_standin(questions, seed=args.seed)
    try:
        over: dict[str, Any] = {
            "mode": "live",
            "questions": str(qfile),
            "encoder": args.encoder,
            "popsize": args.popsize,
            "m": args.m,
            "device": args.device,
            "seed": args.seed,
            "cache_path": str(work / f"cache-{name}.sqlite"),
            "budget_usd": args.budget_usd,
            "splits": args.split_shares,
            **pool_overrides(srv),
        }
        collect_usd = collect_ledger = 0.0
        collect_calls = 0
        asked_again: dict[str, Any] = {}
        t0 = time.monotonic()
        if name == "new":
            # lazy: the pool client (httpx: ~250 modules, ~0.13 s) kept off the CLI start
            from trinity.session.collect import collect

            ov = pool_overrides(srv)
            pool = load_pool(
                "local",
                base_url=ov["base_url"],
                models=ov["pool_models"],
                prices={m: Price(p["price_in"], p["price_out"]) for m, p in ov["prices"].items()},
            )
            # only the questions training reads (train + val, the run's own splits): the test split is
            # evaluated live, so its rows would be bought and never read
            splits = inputs_from_config(load_config(None, {**over, "generations": 1})).splits
            read = set(splits["train"]) | set(splits["val"])
            asked = [q for q in questions if q.id in read] if not args.collect_all else questions
            if args.collect_per_group:  # a few training questions per topic: their labels' means name the specialists
                asked = pick_per_group(
                    [q for q in questions if q.id in splits["train"]], args.collect_per_group, args.seed
                )
            res = collect(
                asked,
                pool,
                work / "new-matrix.json",
                args.collect_k,
                cache_path=over["cache_path"],
                budget_usd=args.budget_usd,
                max_k=args.collect_max_k,
            )
            if res.stopped or res.complete_questions < len(asked):
                raise TrinityError(f"collect did not finish: {res.stopped or res.last_error}")
            st = srv.stats()
            collect_usd, collect_calls = st.billed_usd, st.calls
            asked_again = res.asked_again
            collect_ledger = ledger_usd(work / "new-matrix.ledger.jsonl")
            # the defaults of a live run on a collected matrix: its labels' warm start, then the race
            over.update({"matrix": str(res.matrix_path)})
            if args.label_targets:  # the new recipe's warm-start targets (default: the run's own default)
                over["label_targets"] = args.label_targets
            if getattr(args, "patience", None):
                over["patience"] = args.patience
        else:
            over.update({"live_recipe": "plain", "warm_start": "auto"})
        rd = work / f"run-{name}"
        points: list[dict[str, Any]] = []
        eval_usd = 0.0
        ev = None
        # the new recipe's first point is its warm start alone (generation 0: the collect's $ only)
        stages = ([0] if name == "new" else []) + _stage_gens(args.generations, args.eval_every)
        for i, g in enumerate(stages):
            if i == 0:
                res_t = start_run(load_config(None, {**over, "generations": g}), run_dir=rd)
            else:
                res_t = resume_run(rd, {"generations": g, "base_url": srv.base_url, "cache_path": over["cache_path"]})
            if res_t.status != "finished":
                raise TrinityError(
                    f"{name} recipe: training stopped at generation {res_t.generations}: {res_t.message}"
                )
            before = srv.stats()
            ev = _evaluate(rd, srv.base_url)
            after = srv.stats()
            train_usd = before.billed_usd - eval_usd
            eval_usd += after.billed_usd - before.billed_usd
            points.append(
                {
                    "gen": g,
                    "usd": train_usd,
                    "calls": before.calls - sum(p.get("eval_calls", 0) for p in points),
                    "eval_calls": after.calls - before.calls,
                    "ledger_usd": ledger_usd(rd / "ledger.jsonl") + collect_ledger,
                    "acc": float(np.mean(ev.router_q)),
                    "avg_turns": float(np.mean(ev.router_turns)),
                }
            )
            if not args.json:
                p = points[-1]
                print(
                    f"  {name:<3} gen {g:>3}  $ {p['usd']:.5f}  held-out acc {p['acc']:.3f}  turns {p['avg_turns']:.2f}",
                    flush=True,
                )
        assert ev is not None
        final = srv.stats()
        return {
            "recipe": name,
            "run_dir": str(rd),
            "collect_usd": collect_usd,
            "collect_ledger_usd": collect_ledger,
            "collect_calls": collect_calls,
            "collect_asked_again": asked_again,
            "collect_questions": len(asked) if name == "new" else 0,
            "points": points,
            "server_total_usd": final.billed_usd,
            "server_eval_usd": eval_usd,
            "server_by_model": final.by_model,
            "secs": round(time.monotonic() - t0, 1),
            "_eval": ev,
        }
    finally:
        srv.stop()


def usd_to_reach(points: list[dict[str, Any]], target: float) -> float | None:
    """The cumulative $ at the first evaluation whose held-out accuracy reaches `target`."""
    for p in points:
        if p["acc"] >= target - 1e-12:
            return float(p["usd"])
    return None


def summarise(old: dict[str, Any], new: dict[str, Any], questions, bootstrap: int = 2000) -> dict[str, Any]:
    # lazy: numpy.typing + the stats module kept off the CLI start (as trinity.analysis.cli keeps them)
    from trinity.analysis.stats import paired_bootstrap_ci

    eo, en = old["_eval"], new["_eval"]
    ids_o, ids_n = [q.id for q in eo.questions], [q.id for q in en.questions]
    if ids_o != ids_n:
        raise RuntimeError("the two recipes were evaluated on different questions")
    kinds = np.array([q.kind for q in en.questions])
    singles = en.per_q_model  # (Q, M): one Worker turn of each model (the same answers in both)
    best = int(np.argmax(singles.mean(axis=0)))
    per_topic = {}
    for t in sorted(set(kinds)):
        rows = kinds == t
        accs = singles[rows].mean(axis=0)
        per_topic[str(t)] = {
            "n": int(rows.sum()),
            "best_model": en.models[int(np.argmax(accs))],
            "ceiling": float(accs.max()),
            "new": float(en.router_q[rows].mean()),
            "old": float(eo.router_q[rows].mean()),
        }
    ceiling = float(sum(v["ceiling"] * v["n"] for v in per_topic.values()) / len(kinds))
    old_final = old["points"][-1]["acc"]
    reach_old, reach_new = usd_to_reach(old["points"], old_final), usd_to_reach(new["points"], old_final)

    def ci(a, b):
        return paired_bootstrap_ci(a, b, n_resamples=bootstrap).to_json()

    out = {
        "n_test": len(kinds),
        "per_topic": per_topic,
        "per_topic_ceiling": ceiling,
        "best_single": en.models[best],
        "best_single_acc": float(singles[:, best].mean()),
        "old_final_acc": old_final,
        "new_final_acc": new["points"][-1]["acc"],
        "new_over_ceiling": new["points"][-1]["acc"] / ceiling if ceiling > 0 else None,
        "old_avg_turns": old["points"][-1]["avg_turns"],
        "new_avg_turns": new["points"][-1]["avg_turns"],
        "usd_to_old_final": {"old": reach_old, "new": reach_new},
        "usd_ratio_new_over_old": (reach_new / reach_old) if reach_new is not None and reach_old else None,
        "usd_ratio_new_over_old_total": (
            reach_new / old["points"][-1]["usd"] if reach_new is not None and old["points"][-1]["usd"] else None
        ),
        "total_usd": {"old": old["points"][-1]["usd"], "new": new["points"][-1]["usd"]},
        "ci_new_minus_old": ci(en.router_q, eo.router_q),
        "ci_new_minus_best_single": ci(en.router_q, singles[:, best]),
        "ci_old_minus_best_single": ci(eo.router_q, singles[:, best]),
        # per held-out question (the evaluation's order), so several seeds' figures can be pooled
        # (`trinity.perf.learning_pooled`)
        "per_question": {
            "ids": ids_n,
            "kinds": kinds.tolist(),
            "new": [float(v) for v in en.router_q],
            "old": [float(v) for v in eo.router_q],
            "best_single": [float(v) for v in singles[:, best]],
            "singles": {m: [float(v) for v in singles[:, j]] for j, m in enumerate(en.models)},
            "new_first_role": [ROLES[int(r)] for r in np.asarray(en.role_idx).reshape(-1)],
        },
    }
    return out


def ascii_plot(curves: dict[str, list[dict[str, Any]]], width: int = 60, height: int = 14) -> str:
    """Held-out accuracy (rows) against cumulative $ (columns), one letter per recipe."""
    pts = [(name, p["usd"], p["acc"]) for name, ps in curves.items() for p in ps]
    if not pts:
        return ""
    xmax = max(x for _, x, _ in pts) or 1.0
    grid = [[" "] * (width + 1) for _ in range(height + 1)]
    for name, x, y in pts:
        c, r = int(round(x / xmax * width)), height - int(round(min(max(y, 0.0), 1.0) * height))
        grid[r][c] = name[0].upper() if grid[r][c] in (" ", name[0].upper()) else "*"
    lines = []
    for r, row in enumerate(grid):
        label = f"{(height - r) / height:4.2f}" if r % 2 == 0 else "    "
        lines.append(f"{label} |" + "".join(row))
    lines.append("     +" + "-" * (width + 1))
    lines.append(f"      $0{' ' * (width - 12)}${xmax:.4f}")
    lines.append(
        "      held-out accuracy vs cumulative training $ (" + ", ".join(f"{n[0].upper()} = {n}" for n in curves) + ")"
    )
    return "\n".join(lines)


def png_plot(path: str, curves: dict[str, list[dict[str, Any]]], summary: dict[str, Any]) -> None:
    # lazy: numpy.typing + the plots and stats modules kept off the CLI start (as trinity.analysis.cli keeps them)
    from trinity.analysis.plots import check_plot_path, pyplot

    out = check_plot_path(path)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, ps in curves.items():
        ax.plot([p["usd"] for p in ps], [p["acc"] for p in ps], marker="o", label=f"{name} recipe")
    ax.axhline(summary["per_topic_ceiling"], color="#9467bd", ls="--", label="per-topic ceiling")
    ax.axhline(summary["best_single_acc"], color="#8c8c8c", ls=":", label=f"best single ({summary['best_single']})")
    ax.set_xlabel("cumulative training $ (billed by the stand-in server)")
    ax.set_ylabel(f"held-out accuracy ({summary['n_test']} questions)")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def run_live(args) -> int:
    topics = [t.strip() for t in args.topics.split(",") if t.strip()]
    if not topics or any(t not in ("math", "mc", "code") for t in topics):
        raise InputError(f"--topics {args.topics!r}: use some of math,mc,code")
    if args.generations < 1 or args.popsize < 2 or args.m < 1 or args.eval_every < 1 or args.collect_k < 1:
        raise InputError("--generations >= 1, --popsize >= 2, --m >= 1, --eval-every >= 1, --collect-k >= 1")
    if args.collect_max_k is not None and args.collect_max_k < args.collect_k:
        raise InputError("--collect-max-k >= --collect-k")
    if args.collect_per_group < 0:
        raise InputError("--collect-per-group >= 0 (0: every train + val question)")
    if args.plot and not args.plot.lower().endswith(".png"):
        raise InputError(f"--plot {args.plot}: give a file name ending in .png")
    if args.per_topic is not None and args.per_topic < 2:
        raise InputError("--per-topic >= 2")
    try:
        tr, va, te = (float(x) for x in args.splits.split(","))
    except ValueError:
        raise InputError(f"--splits {args.splits!r}: give three shares, e.g. 0.5,0.15,0.35") from None
    if min(tr, va, te) < 0 or tr <= 0 or te <= 0 or abs(tr + va + te - 1.0) > 1e-6:
        raise InputError(f"--splits {args.splits!r}: three shares >= 0 adding up to 1, train and test > 0")
    args.split_shares = {"train": tr, "val": va, "test": te}
    questions = _questions(topics, args.per_topic)
    # lazy: http.server + http.client (10 modules, ~8 ms) kept off the CLI start
    from trinity.perf.standin import STANDIN_MODELS, Standin

    def go(work: Path) -> dict[str, Any]:
        qfile = work / "questions.jsonl"
        qfile.write_text("".join(json.dumps(q.to_json()) + "\n" for q in questions), encoding="utf-8")
        if not args.json:
            print(f"stand-in pool: {', '.join(m.id for m in STANDIN_MODELS)}; {len(questions)} questions", flush=True)
        new = run_recipe("new", args, qfile, questions, work)  # the short one first: its figures print early
        old = run_recipe("old", args, qfile, questions, work)
        summary = summarise(old, new, questions)
        test_q = new["_eval"].questions
        summary["expected_ceiling"] = Standin(questions, seed=args.seed).ceiling(test_q)
        # each recipe's chosen routes scored by the stand-in's own chances (no draw noise)
        # lazy: the router fit (trinity.optim.fitness) and the stand-in's http.server kept off the CLI start
        from trinity.perf.live_routes import routes

        router = None
        summary["expected_routes"] = {}
        for r in (new, old):
            res, router = routes(Path(r["run_dir"]), router=router)
            summary["expected_routes"][r["recipe"]] = {
                k: res[k]
                for k in (
                    "test_expected_acc",
                    "test_expected_ceiling",
                    "test_expected_share_of_ceiling",
                    "test_best_single",
                    "test_ci_vs_best_single",
                    "test_routes",
                    "test_per_question",
                )
            }
        for r in (old, new):
            r.pop("_eval")
        return {
            "seed": args.seed,
            "patience": getattr(args, "patience", None),
            "encoder": args.encoder,
            "generations": args.generations,
            "popsize": args.popsize,
            "m": args.m,
            "eval_every": args.eval_every,
            "collect_k": args.collect_k,
            "collect_max_k": args.collect_max_k,
            "collect_per_group": args.collect_per_group,
            "collect_all": bool(args.collect_all),
            "topics": topics,
            "splits": args.split_shares,
            "n_questions": len(questions),
            "pool": {
                m.id: {
                    "price_in": m.price_in,
                    "price_out": m.price_out,
                    "tokens_median": m.tokens_median,
                    "verifier_accuracy": m.verifier_accuracy,
                    "skill": m.skill,
                }
                for m in STANDIN_MODELS
            },
            "recipes": {"old": old, "new": new},
            "summary": summary,
        }

    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
        result = go(work)
    else:
        with tempfile.TemporaryDirectory(prefix="trinity-bench-learning-live-") as tmp:
            result = go(Path(tmp))
    curves = {k: v["points"] for k, v in result["recipes"].items()}
    if args.plot:
        png_plot(args.plot, curves, result["summary"])
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print_text(result, args.plot)
    return 0


def print_text(result: dict[str, Any], plot: str | None = None) -> None:
    """The bench's text output of a result (`--json`'s document)."""
    curves = {k: v["points"] for k, v in result["recipes"].items()}
    s = result["summary"]
    print(ascii_plot(curves))

    def usd(v):
        return "not reached" if v is None else f"${v:.5f}"

    print(f"held-out questions: {s['n_test']}; per-topic ceiling {s['per_topic_ceiling']:.3f}", end="")
    print(" (" + ", ".join(f"{t} {v['ceiling']:.2f} by {v['best_model']}" for t, v in s["per_topic"].items()) + ")")
    print(f"best single model: {s['best_single']} {s['best_single_acc']:.3f}")
    for name in ("old", "new"):
        print(
            f"{name} recipe: final acc {s[name + '_final_acc']:.3f}, avg turns {s[name + '_avg_turns']:.2f}, "
            f"training $ {s['total_usd'][name]:.5f}, $ to reach the old recipe's final accuracy "
            f"{usd(s['usd_to_old_final'][name])}"
        )
    nr = result["recipes"]["new"]
    per_group = result.get("collect_per_group") or 0
    which = f"{per_group} train per topic" if per_group else "all" if result["collect_all"] else "train + val"
    print(
        f"new recipe's collect: ${nr['collect_usd']:.5f} ({nr['collect_calls']} calls, k {result['collect_k']}, "
        f"{nr['collect_questions']} questions: {which})"
    )
    for group, (pair, upto) in (nr.get("collect_asked_again") or {}).items():
        print(f"  asked again: {group} ({pair[0]} and {pair[1]} close), up to {upto} answers a question")

    def ratio_text(v):
        return "n/a" if v is None else f"{v:.3f}"

    print(f"new / old $ to the old recipe's final accuracy: {ratio_text(s['usd_ratio_new_over_old'])}")
    print(f"new $ to it / old recipe's total $: {ratio_text(s.get('usd_ratio_new_over_old_total'))}")
    for key, label in (("ci_new_minus_old", "new - old"), ("ci_new_minus_best_single", "new - best single")):
        c = s[key]
        print(f"paired 95% CI {label}: {c['point']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]")
    for name, e in s.get("expected_routes", {}).items():
        c = e["test_ci_vs_best_single"]
        print(
            f"{name} recipe's held-out routes in expectation (turn 1): {e['test_expected_acc']:.3f} of a "
            f"{e['test_expected_ceiling']:.3f} ceiling ({e['test_expected_share_of_ceiling']:.2f}); "
            f"- best single {c['point']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]"
        )
    if plot:
        print(f"plot: {plot}")
