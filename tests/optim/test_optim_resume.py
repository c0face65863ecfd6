"""A real SIGKILL of a child `trinity train` at a random point, then `trinity resume` (stopped once
more with SIGTERM, resumed again): same best_theta.npy, history.json (secs aside) and traces as
the uninterrupted run."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
from optim_helpers import ROOT, history_sans_secs, trinity, write_inputs

from trinity.io import read_jsonl

GENS = 10


def _args(q, m, run):
    return ["train", "--mode", "cached", "--questions", str(q), "--matrix", str(m), "--encoder", "tiny-qwen3",
            "--generations", str(GENS), "--popsize", "8", "--m", "8", "--seed", "3", "--run-dir", str(run)]


def _n_gens(run) -> int:
    p = run / "events.jsonl"
    return sum(1 for e in read_jsonl(p) if e.get("type") == "generation") if p.exists() else 0


def _start_and_kill(cmd, run, after_gens: int, rng: random.Random) -> bool:
    """Start the engine, SIGKILL it once `after_gens` generations are logged plus a random
    delay; False if it finished first."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen([sys.executable, "-m", "trinity", *cmd], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _n_gens(run) < after_gens and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(rng.uniform(0, 0.15))  # anywhere within the next generation, checkpoint writes included
    if p.poll() is not None:
        return False
    p.send_signal(signal.SIGKILL)
    p.wait()
    return True


def test_sigkill_then_resume_matches_uninterrupted(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=12)
    ref = tmp_path / "ref"
    res = trinity(*_args(q, m, ref))
    assert res.returncode == 0, res.stderr

    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    run = tmp_path / "killed"
    first = rng.randint(0, GENS // 2)
    assert _start_and_kill(_args(q, m, run), run, first, rng), f"finished before the kill (seed {seed})"

    # resume, and stop that with SIGTERM: it must end with a `stopped` status and exit 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen([sys.executable, "-m", "trinity", "resume", str(run)], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    target = rng.randint(_n_gens(run) + 1, GENS - 2)
    while _n_gens(run) < target and p.poll() is None:
        time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    last = read_jsonl(run / "events.jsonl")[-1]
    assert last["type"] == "status" and last["status"] == "stopped" and "SIGTERM" in last["message"]
    assert "trinity resume" in out and json.loads((run / "run.json").read_text())["status"] == "stopped"

    res = trinity("resume", str(run))
    assert res.returncode == 0, f"seed {seed}: {res.stderr}"
    assert np.array_equal(np.load(run / "best_theta.npy"), np.load(ref / "best_theta.npy")), f"seed {seed}"
    assert history_sans_secs(run / "history.json") == history_sans_secs(ref / "history.json"), f"seed {seed}"
    # traces: the same lines as the reference, apart from their timestamps
    strip = lambda rows: [{k: v for k, v in r.items() if k != "time"} for r in rows]  # noqa: E731
    assert strip(read_jsonl(run / "traces.jsonl")) == strip(read_jsonl(ref / "traces.jsonl")), f"seed {seed}"
    events = read_jsonl(run / "events.jsonl")
    assert sorted(e["gen"] for e in events if e["type"] == "generation") == list(range(1, GENS + 1))
    assert events[-1]["type"] == "status" and events[-1]["status"] == "finished"
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
