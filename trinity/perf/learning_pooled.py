"""Several seeds of `trinity bench learning --live --json`, pooled: one seed's held-out split is 21
questions, too few for a paired CI to tell a router that beats the best single model by 0.1 from
one that does not. Each seed has its own split, its own stand-in world and its own run, so their
held-out questions pool as strata: the CI resamples every seed's questions within that seed.

Reported, measured (one live session per held-out question, as each seed's bench measured it)
and in expectation (each question scored by the stand-in's own chance of a right answer under
the router's turn-1 pick, `trinity.perf.live_routes`):

- the new recipe's held-out accuracy over all seeds' questions, against the pooled per-topic
  ceiling (each seed's topic ceilings weighted by its questions) and the best single model (each
  seed's own, chosen on its questions, as the bench chose it);
- paired CIs of new − best single and new − old (stratified by seed);
- sessions the new recipe began with a role other than Worker, average turns, and each seed's $
  ratio against the old recipe's total.

    python -m trinity.perf.learning_pooled s0.json s1.json s2.json ... [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from trinity.analysis.stats import stratified_paired_bootstrap_ci
from trinity.errors import InputError


def load(path: str | Path) -> dict[str, Any]:
    """One bench result (`--json` output); a clear message when it is not one with per-question figures."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(
            f"{p}: not a readable bench result ({type(e).__name__}); give `bench learning --live --json` output"
        ) from None
    s = d.get("summary") if isinstance(d, dict) else None
    if not isinstance(s, dict) or "per_question" not in s:
        raise InputError(
            f"{p}: no per-question figures; rerun `trinity bench learning --live --json` with this version"
        )
    return d


def pooled(results: list[dict[str, Any]], bootstrap: int = 4000) -> dict[str, Any]:
    if not results:
        raise InputError("give at least one bench result")
    seeds, strata = [], []
    new, old, best, ceil_q, exp_new, exp_best, exp_ceil_q = [], [], [], [], [], [], []
    non_worker = sessions = 0
    rows = []
    for k, d in enumerate(results):
        s = d["summary"]
        pq = s["per_question"]
        n = len(pq["ids"])
        # each question's topic ceiling: the topic's best model on this seed's held-out questions,
        # as the seed's bench measured it
        q_ceiling = [float(s["per_topic"][t]["ceiling"]) for t in pq["kinds"]]
        seed = d.get("seed", s.get("seed", k))
        seeds.append(seed)
        strata += [k] * n
        new += pq["new"]
        old += pq["old"]
        best += pq["best_single"]
        ceil_q += q_ceiling
        roles = pq.get("new_first_role") or []
        non_worker += sum(r != "Worker" for r in roles)
        sessions += len(roles)
        er = (s.get("expected_routes") or {}).get("new") or {}
        epq = er.get("test_per_question")
        if epq is not None:
            if epq["ids"] != pq["ids"]:
                raise InputError(f"result {k}: the expected and the measured figures are on different questions")
            exp_new += epq["routed"]
            exp_best += epq["best_single"]
            exp_ceil_q += [float(er["test_expected_ceiling"])] * n
        rows.append(
            {
                "seed": seed,
                "n": n,
                "new": float(np.mean(pq["new"])),
                "ceiling": float(np.mean(q_ceiling)),
                "best_single": float(np.mean(pq["best_single"])),
                "old": float(np.mean(pq["old"])),
                "new_avg_turns": s.get("new_avg_turns"),
                "usd_ratio_new_over_old_total": s.get("usd_ratio_new_over_old_total"),
                "new_usd_to_old_final": (s.get("usd_to_old_final") or {}).get("new"),
                "old_total_usd": (s.get("total_usd") or {}).get("old"),
                "expected_share": er.get("test_expected_share_of_ceiling"),
            }
        )
    st = np.array(strata)
    ratios = [r["usd_ratio_new_over_old_total"] for r in rows if r["usd_ratio_new_over_old_total"] is not None]
    a_new, a_old, a_best = np.array(new), np.array(old), np.array(best)
    ceiling = float(np.mean(ceil_q))
    out: dict[str, Any] = {
        "seeds": seeds,
        "questions": len(new),
        "per_seed": rows,
        "measured": {
            "new": float(a_new.mean()),
            "old": float(a_old.mean()),
            "best_single": float(a_best.mean()),
            "ceiling": ceiling,
            "new_share_of_ceiling": float(a_new.mean()) / ceiling if ceiling > 0 else None,
            "ci_new_minus_best_single": stratified_paired_bootstrap_ci(a_new, a_best, st, bootstrap).to_json(),
            "ci_new_minus_old": stratified_paired_bootstrap_ci(a_new, a_old, st, bootstrap).to_json(),
        },
        "new_sessions_begun_by_non_worker": f"{non_worker}/{sessions}",
        "new_avg_turns_mean": float(np.mean([r["new_avg_turns"] for r in rows if r["new_avg_turns"] is not None])),
        "usd_ratio_new_over_old_total": {
            "mean": float(np.mean(ratios)) if ratios else None,
            "max": float(np.max(ratios)) if ratios else None,
            # every seed's $ added up: what the new recipe paid to reach each seed's old final accuracy
            # over what the old recipe paid in all (None when a seed's new recipe never reached it)
            "pooled": (
                sum(r["new_usd_to_old_final"] for r in rows) / sum(r["old_total_usd"] for r in rows)
                if rows and all(r["new_usd_to_old_final"] is not None and r["old_total_usd"] for r in rows)
                else None
            ),
        },
    }
    if len(exp_new) == len(new):
        e_new, e_best = np.array(exp_new), np.array(exp_best)
        e_ceiling = float(np.mean(exp_ceil_q))
        out["expected"] = {
            "new": float(e_new.mean()),
            "best_single": float(e_best.mean()),
            "ceiling": e_ceiling,
            "new_share_of_ceiling": float(e_new.mean()) / e_ceiling if e_ceiling > 0 else None,
            "ci_new_minus_best_single": stratified_paired_bootstrap_ci(e_new, e_best, st, bootstrap).to_json(),
        }
    return out


def _ci(c: dict[str, Any]) -> str:
    return f"{c['point']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]"


def print_text(out: dict[str, Any]) -> None:
    print(f"seeds {', '.join(str(s) for s in out['seeds'])}: {out['questions']} held-out questions in all")
    print("seed   new    ceiling  share  best single  old    turns  $ / old total  share in expectation")
    for r in out["per_seed"]:
        ratio = r["usd_ratio_new_over_old_total"]
        print(
            f"{r['seed']!s:<6} {r['new']:.3f}  {r['ceiling']:.3f}    {r['new'] / max(r['ceiling'], 1e-12):.2f}   "
            f"{r['best_single']:.3f}        {r['old']:.3f}  {r['new_avg_turns']:.2f}   "
            f"{'-' if ratio is None else f'{ratio:.3f}x':<13}  {r['expected_share'] if r['expected_share'] is not None else '-'}"
        )
    m = out["measured"]
    print(
        f"pooled, measured: new {m['new']:.3f} = {m['new_share_of_ceiling']:.3f} of the ceiling {m['ceiling']:.3f}; "
        f"new - best single {_ci(m['ci_new_minus_best_single'])}; new - old {_ci(m['ci_new_minus_old'])}"
    )
    if "expected" in out:
        e = out["expected"]
        print(
            f"pooled, in expectation: new {e['new']:.3f} = {e['new_share_of_ceiling']:.3f} of the ceiling "
            f"{e['ceiling']:.3f}; new - best single {_ci(e['ci_new_minus_best_single'])}"
        )
    u = out["usd_ratio_new_over_old_total"]
    print(
        f"sessions begun by a non-Worker: {out['new_sessions_begun_by_non_worker']}; average turns "
        f"{out['new_avg_turns_mean']:.2f}; $ against the old recipe's total: mean {u['mean']:.3f}x, max {u['max']:.3f}x"
        + ("" if u.get("pooled") is None else f", pooled {u['pooled']:.3f}x")
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trinity.perf.learning_pooled", description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="`trinity bench learning --live --json` outputs, one per seed")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        out = pooled([load(p) for p in a.results])
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print_text(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
