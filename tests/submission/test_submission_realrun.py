"""A real (tiny) training run, end to end: `trinity train --mode cached --encoder tiny-qwen3` →
pack → check → submit. A cached run made no paid call, so the receipt gate fails honestly; once
paid calls are on its ledger (appended through the ledger API, as a live phase would), the
bundle passes every gate and is pushed."""

from __future__ import annotations

import json

from submission_helpers import git, isolated_env, make_repo  # noqa: F401 (autouse fixture)
from trinity.cli import main
from trinity.pool.ledger import Ledger
from trinity.runs.rundir import RunDir
from trinity.submission.gates import check_bundle
from trinity.submission.gitsubmit import execute_plan, plan_submission
from trinity.submission.pack import pack_run


def test_tiny_cached_run_to_pushed_submission(tmp_path, capsys):
    run_dir = tmp_path / "runs" / "tiny"
    rc = main(["train", "--mode", "cached", "--questions", "practice", "--matrix", "practice",
               "--encoder", "tiny-qwen3", "--generations", "3", "--popsize", "6", "--m", "8",
               "--run-dir", str(run_dir)])
    assert rc == 0, capsys.readouterr().err
    run = RunDir(run_dir)
    meta = run.read_meta()
    assert meta["status"] == "finished"
    work = make_repo(tmp_path / "git")

    b = pack_run(run.path, "alice", "tinyrouter", out=work)
    receipt = json.loads((b.path / "receipt.json").read_text())
    assert receipt["pool_models"] == meta["models"] and receipt["generations"] == 3
    assert receipt["total_cost_usd"] == 0 and receipt["encoder"] == "tiny-qwen3"
    gates = {r.name: r for r in check_bundle(b.path).results}
    assert gates["receipt"].status == "fail" and "not > 0" in gates["receipt"].reason
    for name in ("rate_limit", "weight_sanity", "ledger", "schema", "theta_roundtrip"):
        assert gates[name].status == "pass", (name, gates[name].reason)
    assert gates["weight_sanity"].numbers["total"] == meta["n_params"]
    assert "practice" in gates["schema"].numbers["configured_from"]

    with Ledger(run.ledger, run.id) as led:
        for model in meta["models"]:
            led.append(provider="practice", model=model, prompt_tokens=400, completion_tokens=120,
                       cost_micro_usd=2_500, cost_source="estimated", purpose="train")
    b2 = pack_run(run.path, "alice", "tinyrouter", out=work)
    report = check_bundle(b2.path, against=work / "submissions")
    by_name = {r.name: r for r in report.results}
    assert by_name["receipt"].status == "pass" and by_name["ledger"].numbers["ledger_usd"] == 0.0075
    assert by_name["duplicate"].status == "fail"  # bundle 1 holds the very same head
    import shutil
    shutil.rmtree(b.path)
    report = check_bundle(b2.path, against=work / "submissions")
    assert report.ok, report.lines()

    res = execute_plan(plan_submission(b2.path, work, "alice", push=True))
    assert res.ok and res.pushed
    assert git(work.parent / "fork.git", "rev-list", "main..sn74-alice").split() == [res.commit]
