"""Does training under the competition's session protocol pay, on a pool whose answers depend on
the prompt wording? Writes the figures of docs/perf/session_protocol.md.

The stand-in pool is the practice server with one change: each simulated model was "tuned" for
one protocol's role contract. Under our (open) prompts it answers as configured; under the
competitions' role contracts ("You are the WORKER. …") model i answers with model i+1's skills.
Two heads are trained live with everything else equal (encoder, seed, pool, reward objective):
one under TinyRouter's protocol, one under ours. Both are then run under TinyRouter's protocol
on the same held-out questions (the runs' val + test splits), and the paired difference in
correctness is bootstrapped.

    python scripts/bench_session_protocol.py [--seeds 1 2] [--generations 12] [--popsize 8] [--m 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from trinity.practice.replies import PracticeResponder
from trinity.practice.server import start_practice_server


class ProtocolTunedResponder(PracticeResponder):
    """Under a competition's role contract, model i answers with the next model's skills."""

    def reply(self, model, messages, seed=0):
        system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        if system.startswith(("You are the THINKER.", "You are the WORKER.", "You are the VERIFIER.")):
            models = list(self.setup.models)
            model = models[(models.index(model) + 1) % len(models)]
        return super().reply(model, messages, seed)


def train(run: Path, protocol: str, seed: int, a, env) -> None:
    cmd = [sys.executable, "-m", "trinity", "train", "--mode", "live", "--pool", "practice"]
    cmd += ["--questions", "practice", "--encoder", "tiny-qwen3", "--competition", "tinyrouter"]
    cmd += ["--protocol", protocol, "--objective", "reward", "--warm-start", "none", "--seed", str(seed)]
    cmd += ["--generations", str(a.generations), "--popsize", str(a.popsize), "--m", str(a.m)]
    cmd += ["--run-dir", str(run), "--json"]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def held_out_correct(run_for_eval: Path, run: Path, key: str) -> tuple[np.ndarray, list[str]]:
    """Correctness per held-out question of `run`'s head, in sessions under TinyRouter's protocol."""
    from trinity.analysis.live import run_system, session_config
    from trinity.optim.routing import load_trained
    from trinity.optim.runinputs import load_run_inputs
    from trinity.runs.rundir import RunDir

    ev = RunDir(run_for_eval)
    cfg = session_config(ev.meta().config, pool="practice", base_url=None).model_copy(
        update={"protocol": "tinyrouter", "competition": "tinyrouter"}
    )
    inputs = load_run_inputs(ev)
    ids = inputs.splits["val"] + inputs.splits["test"]
    by_id = {q.id: q for q in inputs.questions}
    tr = load_trained(run)
    correct, _turns, _cost, _trajs = run_system(
        cfg, ev, tr.router, tr.theta, tr.models, [by_id[i] for i in ids], 1, key
    )
    return np.asarray(correct, dtype=np.float64), ids


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--generations", type=int, default=12)
    ap.add_argument("--popsize", type=int, default=8)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    a = ap.parse_args()
    h = start_practice_server(port=0)
    h.server.responder = ProtocolTunedResponder(seed=h.server.seed)
    os.environ["TRINITY_POOL_BASE_URL"] = h.base_url
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
            os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"]
            diffs, both = [], []
            for seed in a.seeds:
                comp, ours = Path(tmp) / f"comp{seed}", Path(tmp) / f"open{seed}"
                train(comp, "tinyrouter", seed, a, env)
                train(ours, "open", seed, a, env)
                c, ids = held_out_correct(comp, comp, f"bench/comp{seed}")
                o, ids2 = held_out_correct(comp, ours, f"bench/open{seed}")
                assert ids == ids2
                results[f"seed {seed}"] = {"n": len(ids), "trained_competition": c.mean(), "trained_open": o.mean()}
                diffs.append(c - o)
                both.append((c, o))
                print(
                    f"seed {seed}: {len(ids)} held-out questions, under TinyRouter's protocol: trained under "
                    f"TinyRouter's {c.mean():.3f}, under ours {o.mean():.3f}",
                    flush=True,
                )
    finally:
        h.stop()
    d = np.concatenate(diffs)
    rng = np.random.default_rng(0)
    boot = np.array([rng.choice(d, d.size).mean() for _ in range(10_000)])
    lo, hi = np.percentile(boot, [2.5, 97.5])
    c_all = np.concatenate([x for x, _ in both]).mean()
    o_all = np.concatenate([y for _, y in both]).mean()
    results["pooled"] = {
        "n": int(d.size),
        "trained_competition": c_all,
        "trained_open": o_all,
        "paired_diff": float(d.mean()),
        "ci95": [float(lo), float(hi)],
    }
    print(
        f"pooled over {d.size} paired questions: {c_all:.3f} vs {o_all:.3f}, paired difference "
        f"{d.mean():+.3f} [{lo:+.3f}, {hi:+.3f}] (95% bootstrap)"
    )
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
