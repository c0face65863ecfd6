"""A real (tiny) training run, end to end: `trinity train --mode cached --encoder tiny-qwen3` →
pack → check → submit. A cached run made no paid call, so packing it for TinyRouter is refused
up front; once paid calls are on its ledger (appended through the ledger API, as a live phase
would), it packs, and the gates reject the tiny encoder's head size in TinyRouter's words."""

from __future__ import annotations

import json

import pytest
from submission_helpers import git, isolated_env, make_repo  # noqa: F401 (autouse fixture)
from train_argv import train_argv

from trinity.cli import main
from trinity.errors import InputError
from trinity.pool.ledger import Ledger
from trinity.runs.rundir import RunDir
from trinity.submission.gates import check_bundle
from trinity.submission.gitsubmit import execute_plan, plan_submission
from trinity.submission.pack import pack_run


def test_tiny_cached_run_to_pushed_submission(tmp_path, capsys):
    run_dir = tmp_path / "runs" / "tiny"
    rc = main(train_argv(run_dir, questions="practice", matrix="practice", generations=3, popsize=6, m=8))
    assert rc == 0, capsys.readouterr().err
    run = RunDir(run_dir)
    meta = run.read_meta()
    assert meta["status"] == "finished"
    work = make_repo(tmp_path / "git")

    # a cached run made no paid call: TinyRouter's receipt_cost_zero_or_missing, said before packing
    with pytest.raises(InputError, match="receipt_cost_zero_or_missing"):
        pack_run(run.path, "alice", "tinyrouter", out=work)

    with Ledger(run.ledger, run.id) as led:
        for model in meta["models"]:
            led.append(
                provider="practice",
                model=model,
                prompt_tokens=400,
                completion_tokens=120,
                cost_micro_usd=2_500,
                cost_source="estimated",
                purpose="train",
            )
    b = pack_run(run.path, "alice", "tinyrouter", out=work)
    receipt = json.loads((b.path / "receipt.json").read_text())
    assert receipt["generations"] == 3 and receipt["encoder"] == "tiny-qwen3"
    assert receipt["pool_models"] == meta["models"]  # the practice pool has no TinyRouter short names
    report = check_bundle(b.path, against=work / "submissions")
    by_name = {r.name: r for r in report.results}
    assert by_name["receipt"].status == "pass" and by_name["ledger"].numbers["ledger_usd"] == 0.0075
    # the tiny encoder's head is not TinyRouter's (6, 1024) / 13,312: their weights and schema gates
    # reject it, and so does ours, in their words
    assert by_name["weight_sanity"].status == "fail" and "param_count: got" in by_name["weight_sanity"].reason
    assert by_name["schema"].reason.startswith("receipt_n_total_mismatch")
    for name in ("rate_limit", "ledger", "theta_roundtrip", "frozen_files"):
        assert by_name[name].status == "pass", (name, by_name[name].reason)
    assert report.verdict().startswith("[preflight] REJECTED: param_count")

    # pushed anyway, with the gates skipped (and that recorded): the git path works on a real run
    res = execute_plan(plan_submission(b.path, work, "alice", push=True, skip_gates=True))
    assert res.ok and res.pushed
    assert git(work.parent / "fork.git", "rev-list", "main..submission/alice-gen1").split() == [res.commit]
