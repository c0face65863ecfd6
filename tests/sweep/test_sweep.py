"""`trinity sweep` on the session's local Ray instance (2 CPUs, `ray_local` in tests/conftest.py):
trials run two at a time, each with one torch thread."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep_helpers import ROOT, results, write_spec
from trinity_main import trinity_main

from trinity.errors import ConfigError
from trinity.sweep.runner import new_sweep, run_sweep, sweep_status
from trinity.sweep.spec import load_spec

ray = pytest.importorskip("ray", reason="the [ray] extra (pip install -e '.[ray]') runs these tests")
pytestmark = pytest.mark.xdist_group("ray")  # one worker runs the Ray modules (pyproject: --dist loadgroup)
SWEEP_TIMEOUT_S = 240


GENS = 5


def _two(tmp: Path) -> Path:
    # a grid point times two seeds: each trial is a Ray task that loads the encoder, so two trials
    # (not four) are what the sweep, its status and the killed driver's resume need to show
    return write_spec(tmp / "spec.yaml", config={"generations": GENS}, grid={"sigma0": [0.2]}, seeds=[0, 1])


@pytest.fixture(scope="module")
def reference(ray_local, tmp_path_factory):
    """An uninterrupted 2-trial sweep: (spec path, sweep dir, returned doc)."""
    tmp = tmp_path_factory.mktemp("ref")
    sd = new_sweep(_two(tmp), tmp / "sweep")
    return tmp / "spec.yaml", sd, run_sweep(sd.path, timeout_s=SWEEP_TIMEOUT_S)


def test_spec_expands_grid_draws_and_seeds(tmp_path):
    spec = load_spec(
        write_spec(
            tmp_path / "s.yaml",
            grid={"sigma0": [0.05, 0.2]},
            seeds=[3, 4],
            random={
                "samples": 2,
                "seed": 5,
                "params": {"m": {"choice": [4, 8]}, "temperature": {"loguniform": [0.5, 2]}},
            },
        )
    )
    trials = spec.trials()
    assert len(trials) == 2 * 2 * 2 and len({t.id for t in trials}) == 8
    assert [t.config.seed for t in trials[:2]] == [3, 4] and trials[0].config.sigma0 == 0.05
    assert {t.config.m for t in trials} <= {4, 8} and all(0.5 <= t.config.temperature <= 2 for t in trials)
    again = load_spec(tmp_path / "s.yaml").trials()
    assert [t.config.hash() for t in again] == [t.config.hash() for t in trials]  # seeded draws


@pytest.mark.parametrize(
    "sections, needle",
    [
        ({"grid": {"sigma": [0.1]}}, "'sigma' is not a TrainConfig key"),
        ({"grid": {"popsize": [1, 8]}}, "trial t000 (popsize=1)"),
        ({"grid": {"sigma0": []}}, "grid.sigma0: must be a non-empty list"),
        ({"seeds": [0, 0]}, "a seed appears twice"),
        ({"random": {"samples": 2, "params": {"sigma0": {"normal": [0, 1]}}}}, "random.params.sigma0"),
        ({"resources": {"gpus": 1}}, "unknown key 'gpus'"),
        ({"trials": 3}, "unknown key 'trials'"),
    ],
)
def test_bad_spec_is_one_line_naming_the_key(tmp_path, sections, needle):
    with pytest.raises(ConfigError) as e:
        load_spec(write_spec(tmp_path / "bad.yaml", **sections))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_cli_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"grid: [\xff\n")
    rc, _, err = trinity_main(["sweep", bad, "--run-dir", tmp_path / "d"])
    assert rc == 2 and err.startswith("error: ") and "Traceback" not in err
    rc, _, err = trinity_main(["sweep", "status", tmp_path])
    assert rc == 2 and "not a sweep directory" in err


def test_two_trial_sweep(reference):
    _, sd, doc = reference
    assert doc["status"] == "finished" and doc["counts"] == {"finished": 2}
    dirs = sorted(p.name for p in (sd.path / "trials").iterdir())
    assert dirs == ["t000", "t001"]
    on_disk = json.loads((sd.path / "sweep.json").read_text())
    for t in on_disk["trials"]:
        run = sd.path / t["dir"]
        meta = json.loads((run / "run.json").read_text())
        assert meta["status"] == "finished" and meta["config"]["sigma0"] == t["overrides"]["sigma0"]
        hist = json.loads((run / "history.json").read_text())
        assert t["generations"] == len(hist) == GENS
        assert t["best_val_acc"] == hist[-1]["best_val_acc"]
    best = max(on_disk["trials"], key=lambda t: t["best_val_acc"])
    assert on_disk["best"] == {"trial": best["id"], "best_val_acc": best["best_val_acc"]}
    # seeds differ → different runs; the same spec point and seed is an ordinary, resumable run
    assert results(sd.path / "trials/t000") != results(sd.path / "trials/t001")


def test_status_cli_says_each_trial_state_and_best_val(reference, capsys):
    from trinity.cli import main

    _, sd, doc = reference
    capsys.readouterr()
    assert main(["sweep", "status", str(sd.path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(t["id"], t["state"], t["best_val_acc"]) for t in out["trials"]] == [
        (t["id"], "finished", t["best_val_acc"]) for t in doc["trials"]
    ]
    assert main(["sweep", str(sd.path)]) == 0  # `trinity sweep DIR`: the same, as a table
    text = capsys.readouterr().out
    assert text.startswith(f"sweep {sd.path.name}: finished  2 trials (2 finished)") and "best: t" in text


def test_failing_trial_does_not_stop_the_others(ray_local, tmp_path):
    spec = write_spec(tmp_path / "spec.yaml", grid={"encoder": ["tiny-qwen3", str(tmp_path / "no-such-encoder")]})
    sd = new_sweep(spec, tmp_path / "sweep")
    doc = run_sweep(sd.path, timeout_s=SWEEP_TIMEOUT_S)
    assert doc["status"] == "incomplete"
    ok, bad = doc["trials"]
    assert ok["state"] == "finished" and "error" not in ok
    assert bad["state"] == "failed" and "no-such-encoder" in bad["error"]
    assert json.loads((sd.path / "sweep.json").read_text())["trials"][1]["error"] == bad["error"]
    status = sweep_status(sd.path)
    assert status["counts"] == {"finished": 1, "failed": 1}


def _gen_count(run: Path) -> int:
    ev = run / "events.jsonl"
    return ev.read_text(errors="replace").count('"type": "generation"') if ev.exists() else 0


@pytest.mark.slow  # end to end: a driver process killed mid-sweep, then the sweep resumed
def test_killed_driver_then_resume_equals_uninterrupted(reference, tmp_path):
    _, ref, ref_doc = reference
    killed = new_sweep(_two(tmp_path), tmp_path / "killed")  # the reference's spec
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    drv = subprocess.Popen(
        [sys.executable, "-m", "trinity", "sweep", "resume", str(killed.path), "--address", address],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + SWEEP_TIMEOUT_S
        while not any(_gen_count(p) >= 2 for p in (killed.path / "trials").glob("t*")):
            assert drv.poll() is None, "the driver ended before any trial got going"
            assert time.monotonic() < deadline, "no trial reached generation 2"
            time.sleep(0.05)
        os.killpg(drv.pid, signal.SIGKILL)
    finally:
        if drv.poll() is None:
            os.killpg(drv.pid, signal.SIGKILL)
        drv.wait(timeout=30)
    interrupted = sweep_status(killed.path)
    assert interrupted["counts"].get("finished", 0) < 2, interrupted["counts"]

    doc = run_sweep(killed.path, timeout_s=SWEEP_TIMEOUT_S)
    assert doc["status"] == "finished" and len(doc["trials"]) == 2
    by_point = {json.dumps(t["overrides"], sort_keys=True): t for t in ref_doc["trials"]}
    for t in doc["trials"]:
        same = by_point[json.dumps(t["overrides"], sort_keys=True)]  # the same sigma0 and seed
        assert results(killed.path / t["dir"]) == results(ref.path / same["dir"]), t["id"]


@pytest.fixture
def practice_server():
    from trinity.practice.server import start_practice_server

    h = start_practice_server(port=0)
    yield h
    h.stop()


def test_one_budget_across_two_live_trials(ray_local, practice_server, tmp_path, capsys):
    from trinity.benchmarks.practice import practice_questions
    from trinity.cli import main

    qfile = tmp_path / "mathmc.jsonl"
    qfile.write_text("".join(json.dumps(q.to_json()) + "\n" for q in practice_questions() if q.kind != "code"))
    cap = 0.007  # the priciest model's worst case (max_tokens of output) is ~$0.005 a call
    # each trial its own response cache: a cache hit would be free and prove nothing about the budget
    spec = write_spec(
        tmp_path / "live.yaml",
        base=None,
        config={
            "mode": "live",
            "pool": "practice",
            "base_url": practice_server.base_url,
            "questions": str(qfile),
            "generations": 6,
            "popsize": 4,
            "m": 4,
            "max_turns": 2,
            "concurrency": 4,
        },
        grid={"cache_path": [str(tmp_path / "c0.sqlite"), str(tmp_path / "c1.sqlite")]},
        resources={"cpus_per_trial": 0.5},  # both trials at once on the 1-CPU instance: one budget, two spenders
    )
    before = practice_server.stats.billed_usd
    sd = new_sweep(spec, tmp_path / "sweep", budget_usd=cap)
    doc = run_sweep(sd.path, timeout_s=SWEEP_TIMEOUT_S)
    billed = practice_server.stats.billed_usd - before
    assert 0 < billed <= cap, (billed, cap)  # counted at the server
    states = [t["state"] for t in doc["trials"]]
    assert "stopped" in states, doc["trials"]  # the cap was reached ...
    stopped = [t for t in doc["trials"] if t["state"] == "stopped"]
    assert all("sweep budget" in t.get("message", "") for t in stopped)
    # ... by the two trials together: both paid for calls
    assert all(float(t["cost_usd"]) > 0 for t in doc["trials"])
    # `ledger report SWEEP_DIR` sums the trials' ledgers, and that is what the server charged
    capsys.readouterr()
    assert main(["ledger", "report", str(sd.path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_runs"] == 2 and rep["ok"]
    assert abs(rep["total_usd"] - billed) < 1e-6 * max(1, rep["n_records"])
    # resume: the holder starts from the ledgers, so nothing more fits under the same cap
    doc2 = run_sweep(sd.path, timeout_s=SWEEP_TIMEOUT_S)
    assert practice_server.stats.billed_usd - before <= cap
    assert doc2["spent_usd"] <= cap
    # `trinity resume TRIAL` (and the app's resume) goes through the sweep: under its one budget,
    # not as a run of its own without one (which would spend on past the sweep's cap)
    tid = stopped[0]["id"]
    capsys.readouterr()
    rc = main(["resume", str(sd.path / "trials" / tid), "--generations", "12"])
    assert practice_server.stats.billed_usd - before <= cap  # counted at the server
    err = capsys.readouterr().err
    assert rc == 1 and f"trinity sweep resume {sd.path} --trial {tid}" in err and "sweep budget" in err, err
    doc3 = sweep_status(sd.path)
    assert doc3["spent_usd"] <= cap
    t3 = next(t for t in doc3["trials"] if t["id"] == tid)
    assert t3["state"] == "stopped" and "sweep budget" in t3.get("message", "")
    # while a driver holds the sweep (and its budget), a trial's resume is refused in one line
    from trinity.runs.rundir import RunDir

    with RunDir(sd.path).lock():
        assert main(["sweep", "resume", str(sd.path), "--trial", tid]) != 0
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "is being run by its driver" in err and f"--trial {tid}" in err, err
    assert main(["sweep", "resume", str(sd.path), "--trial", "t999"]) != 0
    assert "has no trial t999" in capsys.readouterr().err


def test_shipped_example_spec_expands():
    trials = load_spec(ROOT / "configs" / "sweep-practice.yaml").trials()
    assert len(trials) == 4 and {t.config.encoder for t in trials} == {"tiny-qwen3"}
    assert {t.config.mode for t in trials} == {"cached"} and {t.config.seed for t in trials} == {0, 1}


def test_without_ray_one_line_names_the_extra(tmp_path, monkeypatch, capsys):
    from trinity.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    rc = main(["sweep", str(_two(tmp_path)), "--run-dir", str(tmp_path / "sweep")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and 'pip install -e ".[ray]"' in err
    assert not (tmp_path / "sweep").exists()
    from trinity.config import load_config
    from trinity.optim.engine import start_run

    with pytest.raises(ConfigError, match=r'pip install -e "\.\[ray\]"'):
        start_run(
            load_config(ROOT / "configs" / "practice.yaml", {"encoder": "tiny-qwen3", "workers": 2}),
            run_dir=tmp_path / "run",
        )
    assert not (tmp_path / "run").exists()  # checked before the run dir is created


def test_trials_no_node_can_hold_are_refused(ray_local, tmp_path):
    spec = write_spec(tmp_path / "gpu.yaml", resources={"gpus_per_trial": 1})
    sd = new_sweep(spec, tmp_path / "sweep")
    with pytest.raises(ConfigError, match="the Ray cluster has 0 GPUs"):
        run_sweep(sd.path, timeout_s=SWEEP_TIMEOUT_S)
