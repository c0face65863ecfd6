"""Live training against the practice pool server over real loopback HTTP (no mocks).

The engine runs as a child `trinity train --mode live` process pointed at an in-test practice
server (TRINITY_POOL_BASE_URL), so the server's request counts are the ground truth of what was
paid for.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from train_argv import train_argv

from trinity.io import read_jsonl
from trinity.pool.ledger import verify_ledger
from trinity.practice.server import Faults, start_practice_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server():
    h = start_practice_server(port=0)
    yield h
    h.stop()


def _env(server, cache_dir):
    # Each run gets its own response cache: otherwise a temperature-0 repeat is a free cache hit
    # and the server's request counts would say nothing about the journal.
    return {
        **os.environ,
        "TRINITY_POOL_BASE_URL": server.base_url,
        "OMP_NUM_THREADS": "1",
        "XDG_CACHE_HOME": str(cache_dir),
    }


def _train_cmd(questions_file, run_dir, gens, P, m, *extra):
    live = (
        "--pool",
        "practice",
        "--json",
        "--warm-start",
        "none",
    )  # learning from a zero head (the role default: test_live_stop_penalty)
    argv = train_argv(
        run_dir, *live, *extra, questions=questions_file, mode="live", generations=gens, popsize=P, m=m, seed=1
    )
    return [sys.executable, "-m", "trinity", *argv]


def _gens(run_dir):
    return [e for e in read_jsonl(Path(run_dir) / "events.jsonl") if e["type"] == "generation"]


def _status(run_dir):
    return [e for e in read_jsonl(Path(run_dir) / "events.jsonl") if e["type"] == "status"][-1]


def test_live_training_learns_and_accounts_every_call(server, questions_file, tmp_path):
    run = tmp_path / "run"
    before = server.stats
    out = subprocess.run(
        _train_cmd(questions_file, run, 5, 8, 6),
        env=_env(server, tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    gens = _gens(run)
    assert [g["gen"] for g in gens] == [1, 2, 3, 4, 5]
    # learning: the population's mean reward rises well above the first generation's
    assert np.mean([g["mean"] for g in gens[2:]]) >= gens[0]["mean"] + 0.15, [g["mean"] for g in gens]
    # every paid call is in the verified ledger, and the ledger agrees with the events
    rep = verify_ledger(run / "ledger.jsonl")
    assert rep.ok and rep.n_records == gens[-1]["calls"] > 0
    assert abs(rep.total_micro_usd / 1e6 - gens[-1]["cost_usd"]) < 1e-6
    served = server.stats.completions - before.completions
    assert (
        served + sum(t.get("cache_hit", False) for tr in read_jsonl(run / "traces.jsonl") for t in tr["turns"])
        >= rep.n_records
    )
    traces = read_jsonl(run / "traces.jsonl")
    from trinity.session.racing import race_sessions

    # the race recipe: successive halving each generation, the incumbent again from generation 2
    assert len(traces) == 5 * race_sessions(8, 6) + 4 * 6
    t0 = traces[-1]
    assert 1 <= len(t0["turns"]) <= 5 and {
        "model",
        "role",
        "model_probs",
        "role_probs",
        "verdict",
        "cost_usd",
        "cache_hit",
    } <= set(t0["turns"][0])
    assert all("simulated" in t["model"] for tr in traces for t in tr["turns"])
    assert _status(run)["status"] == "finished"


@pytest.fixture
def ref_server():
    h = start_practice_server(port=0)
    yield h
    h.stop()


def test_kill_9_and_resume_pays_no_call_twice(server, ref_server, questions_file, tmp_path):
    for s in (server, ref_server):
        s.set_faults(Faults(rate_slow=1.0, slow_ms=20))  # every reply takes 20 ms: calls are in flight
    # The uninterrupted reference runs meanwhile, against a server of its own (its replies depend
    # on the request alone), so `server`'s counts are the interrupted run's only.
    ref = tmp_path / "ref"
    ref_err = tmp_path / "ref.stderr"
    with open(ref_err, "w") as err:
        ref_p = subprocess.Popen(
            _train_cmd(questions_file, ref, 3, 4, 3),
            env=_env(ref_server, tmp_path / "cache-ref"),
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
        )
    try:
        _kill_9_and_resume(server, questions_file, tmp_path, ref_p, ref, ref_err)
    finally:
        if ref_p.poll() is None:
            ref_p.kill()
            ref_p.wait()


def _kill_9_and_resume(server, questions_file, tmp_path, ref_p, ref, ref_err):
    run = tmp_path / "run"
    s0 = server.stats
    p = subprocess.Popen(
        _train_cmd(questions_file, run, 3, 4, 3),
        env=_env(server, tmp_path / "cache"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    journal = run / "journal.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline:  # kill in the middle of generation 2
        if (
            (run / "events.jsonl").exists()
            and len(_gens(run)) >= 1
            and journal.exists()
            and len(read_jsonl(journal)) > _gens(run)[0]["calls"] + 5
        ):
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(0.3)  # let the server finish the requests that were in flight
    at_kill = server.stats.requests - s0.requests
    journaled = sum(r["result"]["cost_source"] in ("reported", "estimated") for r in read_jsonl(journal))
    ledgered = verify_ledger(run / "ledger.jsonl").n_records
    lost_in_flight = at_kill - journaled
    assert 0 <= lost_in_flight <= 64  # sent but never recorded: the provider may have billed those
    # A kill between a call's ledger record and its journal line: billed (and in the ledger), but a
    # resume cannot replay it, so it is bought again — and both purchases are in the ledger.
    rebought = ledgered - journaled
    assert 0 <= rebought <= lost_in_flight

    r = subprocess.run(
        [sys.executable, "-m", "trinity", "resume", str(run), "--json"],
        env=_env(server, tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    total = server.stats.requests - s0.requests
    rep = verify_ledger(run / "ledger.jsonl")
    assert rep.ok
    recs = read_jsonl(journal)
    keys = [rec["key"] for rec in recs]
    # Per-generation accounting (history's cost_usd/calls) is the same as the uninterrupted run's:
    # identical concurrent temperature-0 requests are paid once (single flight), so which of two
    # twins was in flight at the kill no longer changes how many calls a generation paid for.
    paid = [r for r in recs if r["result"]["cost_source"] in ("reported", "estimated")]
    assert len(keys) == len(set(keys))  # every call once (cache hits are journaled too, at $0)
    assert len(paid) == rep.n_records - rebought  # one ledger record per paid call, re-bought ones twice
    # Only the calls lost in flight were sent again; everything recorded was replayed for free.
    assert total == rep.n_records + (at_kill - ledgered)
    # ... and the resume said so before buying them again (sent, never recorded: maybe billed).
    warned = [
        e["message"]
        for e in read_jsonl(run / "events.jsonl")
        if e["type"] == "log" and "were in flight when this run was last stopped" in e.get("message", "")
    ]
    if lost_in_flight:
        assert warned and int(warned[0].split()[0]) >= lost_in_flight, warned
    # ... and the resumed run ends exactly where the uninterrupted one did.
    assert ref_p.wait(timeout=600) == 0, ref_err.read_text()[-2000:]
    np.testing.assert_array_equal(np.load(run / "best_theta.npy"), np.load(ref / "best_theta.npy"))
    # money per generation differs by what the resume replayed for free (cost_per_correct with it)
    strip = lambda h: [
        {k: v for k, v in g.items() if k not in ("secs", "time", "cost_usd", "calls", "cost_per_correct")} for g in h
    ]
    h_run, h_ref = json.loads((run / "history.json").read_text()), json.loads((ref / "history.json").read_text())
    assert strip(h_run) == strip(h_ref)
    # Per-generation accounting: the same paid calls as the uninterrupted run, plus at most the
    # re-bought ones. Identical concurrent temperature-0 requests are paid once (single flight)
    # and an answer is cached before it is journaled, so which twin was in flight at the kill no
    # longer changes a generation's count (it did: 108 vs 110 calls in generation 2).
    assert h_ref[-1]["calls"] <= h_run[-1]["calls"] <= h_ref[-1]["calls"] + rebought, (h_run, h_ref, rebought)
    assert h_run[0] == {**h_ref[0], "secs": h_run[0]["secs"]}


def test_out_of_credit_stops_cleanly_with_checkpoint(server, questions_file, tmp_path):
    run = tmp_path / "run"
    s0 = server.stats
    # gen 1 needs <= 60 calls (12 sessions x <= 5 turns); 4 gens need >= 96 (>= 2 turns each)
    server.set_faults(Faults(credit_after=s0.completions + 70))
    r = subprocess.run(
        _train_cmd(questions_file, run, 4, 4, 3),
        env=_env(server, tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 4, (r.returncode, r.stderr[-1500:])
    st = _status(run)
    assert st["status"] == "stopped" and st["message"].startswith("stopped: out of credit")
    gens = _gens(run)
    assert 1 <= len(gens) < 4  # completed generations kept
    assert json.loads((run / "run.json").read_text())["status"] == "stopped"
    rep = verify_ledger(run / "ledger.jsonl")
    assert rep.ok and rep.n_records >= gens[-1]["calls"]
    assert (run / "checkpoint").exists()


def test_budget_cap_stops_before_passing_it(server, questions_file, tmp_path):
    run = tmp_path / "run"
    r = subprocess.run(
        _train_cmd(questions_file, run, 30, 4, 3, "--budget-usd", "0.008"),
        env=_env(server, tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 4, (r.returncode, r.stderr[-1500:])
    st = _status(run)
    assert st["status"] == "stopped" and st["message"].startswith("stopped: budget reached")
    rep = verify_ledger(run / "ledger.jsonl")
    assert rep.ok and 0 < rep.total_micro_usd <= 8_000  # never past the cap


def test_local_pool_takes_its_models_from_the_run_config(server, questions_file, tmp_path):
    """`--pool local` has no model list in configs/models.yaml; `--pool-models` (or `pool_models:`
    in a config) gives θ's rows. Here the local server is the practice server."""
    run = tmp_path / "local"
    models = "simulated/coder,simulated/mathlete,simulated/scholar"
    pool = ("--pool", "local", "--base-url", server.base_url, "--pool-models", models)
    argv = train_argv(
        run,
        *pool,
        "--json",
        "--price-in",
        "0",
        "--price-out",
        "0",
        mode="live",
        questions=questions_file,
        generations=1,
        popsize=2,
        m=2,
    )
    cmd = [sys.executable, "-m", "trinity", *argv]
    r = subprocess.run(cmd, env=_env(server, tmp_path / "cache"), capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert r.returncode == 0, r.stderr
    meta = json.loads((run / "run.json").read_text())
    assert meta["models"] == models.split(",") and meta["config"]["pool_models"] == models.split(",")
    used = {t["model"] for tr in read_jsonl(run / "traces.jsonl") for t in tr["turns"]}
    assert used and used <= set(models.split(","))
    assert server.stats.requests > 0
    # Without a model list the local pool is refused up front, naming the fix.
    r = subprocess.run(
        cmd[: cmd.index("--pool-models")] + cmd[cmd.index("--pool-models") + 2 :],
        env=_env(server, tmp_path / "cache"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
    )
    assert r.returncode != 0 and "has no models" in r.stderr and "--pool-models" in r.stderr
