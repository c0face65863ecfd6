#!/usr/bin/env python3
"""Done-means check of issue 11: a live run on the TinyRouter pool, packed for TinyRouter, run
through TinyRouter's own `scripts/preflight_submission.py`; a MiniRouter bundle through MiniRouter's
`utility/validate_submission.py`. Their code runs from clones the caller made (never vendored).

The provider is a loopback stand-in: the practice server's simulation (trinity.practice.replies)
serving TinyRouter's three OpenRouter model ids over real HTTP (fake key), answering the composite
fixture questions (MATH-500 and MMLU in their real schemas), priced at TinyRouter's own table so the
ledger's reported cost is what their ledger check recomputes.

    python scripts/competition_check.py --tinyrouter /tmp/tr --minirouter /tmp/mr --out /tmp/cc \
        [--encoder qwen3-0.6b-random] [--generations 3] [--popsize 4] [--m 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "benchmarks"


def _run(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    print("$", " ".join(str(c) for c in cmd), flush=True)
    t0 = time.time()
    r = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True)
    print(r.stdout[-4000:], r.stderr[-3000:], f"[rc {r.returncode}, {time.time() - t0:.1f}s]", sep="\n", flush=True)
    return r


def composite_questions(out: Path) -> Path:
    from trinity.benchmarks import get_benchmark

    qs = get_benchmark("math500").load(data=str(FIX / "math500_test.jsonl")) + get_benchmark("mmlu").load(
        data=str(FIX / "mmlu_test.jsonl")
    )
    path = out / "composite.jsonl"
    path.write_text("".join(json.dumps(q.to_json()) + "\n" for q in qs))
    return path


def stand_in(questions: Path):
    """The practice server, its simulated profiles under TinyRouter's model ids, on the composite questions."""
    from trinity.competition.profiles import TINYROUTER_PROFILE as TR
    from trinity.competition.protocol import TINYROUTER_PROTOCOL
    from trinity.data.questions import load_questions
    from trinity.practice.replies import PracticeResponder
    from trinity.practice.server import start_practice_server
    from trinity.practice.simulation import ModelProfile, practice_setup

    base = practice_setup()
    ids = list(TR.model_names)  # our openrouter ids, router order
    models = {}
    for mid, prof in zip(ids, base.models.values()):
        pin, pout = TR.ledger_prices[TR.short_name(mid)]
        models[mid] = ModelProfile(mid, prof.skill, prof.plan_boost, prof.verifier_accuracy, pin, pout, 0)
    responder = PracticeResponder(setup=replace(base, models=models))
    responder.models = tuple(models)
    for q in load_questions(questions):
        responder.add_question(q)  # the bare text, the open protocol's rendering and the competitions'
        # what this run's sessions show the pool: TinyRouter's protocol (its pool's default)
        responder.by_text.setdefault(TINYROUTER_PROTOCOL.render_question(q).strip(), q)
    h = start_practice_server(port=0)
    h.server.responder = responder
    return h


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinyrouter", type=Path, required=True, help="a clone of James-CUDA/Gittensor-TinyRouter")
    ap.add_argument("--minirouter", type=Path, help="a clone of mini-router/minirouter")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--encoder", default="qwen3-0.6b-random")
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--popsize", type=int, default=4)
    ap.add_argument("--m", type=int, default=2)
    ap.add_argument("--python", default=sys.executable, help="python for THEIR scripts (a throwaway venv)")
    a = ap.parse_args()
    # their code runs from the caller's clones: a missing one is one line, before anything runs
    for flag, clone, script in (
        ("--tinyrouter", a.tinyrouter, "scripts/preflight_submission.py"),
        ("--minirouter", a.minirouter, "utility/validate_submission.py"),
    ):
        if clone is not None and not (clone / script).is_file():
            print(f"competition_check: {flag} {clone} is not a clone of the competition's repository (no {script})")
            return 2
    from trinity.runs.records import read_run_meta

    a.out.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    qfile = composite_questions(a.out)
    h = stand_in(qfile)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRINITY_POOL_BASE_URL": h.base_url,
        "OPENROUTER_API_KEY": "sk-or-fake-loopback-0000",
        "XDG_CACHE_HOME": str(a.out / "cache"),
        "MINERTUI_DATA_DIR": str(a.out / "data"),
        "OMP_NUM_THREADS": "2",
    }
    run_dir = a.out / "runs" / "tr-live"
    shutil.rmtree(run_dir, ignore_errors=True)
    t0 = time.time()
    r = _run(
        [
            sys.executable,
            "-m",
            "trinity",
            "train",
            "--mode",
            "live",
            "--pool",
            "openrouter",
            "--questions",
            qfile,
            "--encoder",
            a.encoder,
            "--generations",
            a.generations,
            "--popsize",
            a.popsize,
            "--m",
            a.m,
            "--seed",
            "1",
            "--run-dir",
            run_dir,
        ],
        env=env,
        cwd=ROOT,
    )
    results["train"] = {
        "rc": r.returncode,
        "seconds": round(time.time() - t0, 1),
        "served_requests": h.stats.completions,
    }
    h.stop()
    if r.returncode != 0:
        print(json.dumps(results, indent=2))
        return 1
    meta = read_run_meta(run_dir)
    results["train"].update(models=meta.models, n_params=meta.n_params, competition=meta.competition)
    # pack into the clone of TinyRouter, then THEIR preflight, with the exported ledger
    shutil.rmtree(a.tinyrouter / "submissions" / "minertui-check", ignore_errors=True)
    r = _run(
        [
            sys.executable,
            "-m",
            "trinity",
            "pack",
            run_dir,
            "--miner",
            "minertui-check",
            "--format",
            "tinyrouter",
            "--out",
            a.tinyrouter,
        ],
        env=env,
        cwd=ROOT,
    )
    results["pack"] = {"rc": r.returncode, "out": r.stdout.strip().splitlines()[:2]}
    bundle = sorted((a.tinyrouter / "submissions" / "minertui-check").iterdir())[-1]
    receipt = json.loads((bundle / "receipt.json").read_text())
    results["receipt"] = {
        k: receipt.get(k)
        for k in ("benchmark", "pool_models", "n_total", "generations", "total_cost_usd", "ledger_export")
    }
    r = _run([sys.executable, "-m", "trinity", "check", bundle, "--json"], env=env, cwd=ROOT)
    ours = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    results["trinity_check"] = {
        "rc": r.returncode,
        "verdict": ours.get("verdict"),
        "gates": {g["name"]: g["status"] for g in ours.get("gates", [])},
    }
    ledger = run_dir / receipt["ledger_export"]["file"]
    sub = f"minertui-check/{bundle.name}"
    for name, extra in (("preflight", {}), ("preflight_with_ledger", {"TRINITY_COST_LEDGER": str(ledger)})):
        their_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": "src", **extra}
        r = _run(
            [a.python, "scripts/preflight_submission.py", "--submission", sub, "--benchmark", "composite"],
            env=their_env,
            cwd=a.tinyrouter,
        )
        results[name] = {"rc": r.returncode, "tail": (r.stdout + r.stderr).strip().splitlines()[-12:]}
    shutil.rmtree(a.tinyrouter / "submissions" / "minertui-check", ignore_errors=True)
    if a.minirouter:
        # their committed bundle is moved out of the way (git restores it afterwards)
        shutil.rmtree(a.minirouter / "submissions" / "final_model", ignore_errors=True)
        r = _run(
            [
                sys.executable,
                "-m",
                "trinity",
                "pack",
                run_dir,
                "--miner",
                "minertui-check",
                "--competition",
                "minirouter",
                "--out",
                a.minirouter,
            ],
            env=env,
            cwd=ROOT,
        )
        results["mr_pack"] = {"rc": r.returncode, "err": r.stderr.strip()[-300:]}
        summary = a.minirouter / "submissions" / "final_model" / "summary.json"
        if summary.exists():
            results["mr_summary"] = {
                k: json.loads(summary.read_text()).get(k) for k in ("benchmark", "n_total", "pool")
            }
        r = _run(
            [a.python, "utility/validate_submission.py", "--dir", "submissions/final_model"],
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            cwd=a.minirouter,
        )
        results["mr_validate"] = {"rc": r.returncode, "tail": r.stdout.strip().splitlines()[-8:]}
        _run(["git", "checkout", "--", "submissions/final_model"], cwd=a.minirouter)
        _run(["git", "clean", "-fdq", "submissions/final_model"], cwd=a.minirouter)
    (a.out / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
