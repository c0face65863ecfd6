"""The seven gates: a good bundle passes them all; a bundle built to fail one fails it, with the
numbers behind the verdict."""

from __future__ import annotations

import json

import numpy as np
import pytest
from submission_helpers import MODELS, isolated_env, make_run  # noqa: F401 (autouse fixture)

from trinity.cli import main
from trinity.errors import InputError
from trinity.submission.gates import check_bundle, head_cosine
from trinity.submission.history import SubmissionHistory
from trinity.submission.pack import pack_run


def _gates(report) -> dict:
    return {r.name: r for r in report.results}


def _pack(tmp_path, name="r1", **kw):
    run = make_run(tmp_path / "runs" / name, **kw)
    return run, pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")


def test_good_bundle_passes_every_gate(tmp_path, capsys):
    _, prior = _pack(tmp_path, "r0", seed=7)
    run, b = _pack(tmp_path, "r1", seed=1)
    rep = check_bundle(b.path, against=tmp_path / "repo" / "submissions")
    g = _gates(rep)
    assert [r.name for r in rep.results] == [
        "rate_limit",
        "weight_sanity",
        "duplicate",
        "receipt",
        "ledger",
        "schema",
        "theta_roundtrip",
        "frozen_files",
    ]
    # not a git checkout: the frozen-files gate has no diff to look at and says so
    assert all(r.status == "pass" for r in rep.results if r.name != "frozen_files"), rep.lines()
    assert g["frozen_files"].status == "warn" and "not in a git checkout" in g["frozen_files"].reason
    assert rep.verdict() == "All offline gates passed."
    assert rep.ok and rep.run_dir == str(run.path.resolve())
    assert g["weight_sanity"].numbers["total"] == 13_312
    assert g["duplicate"].numbers["compared"] == 1 and g["duplicate"].numbers["closest"] == str(prior.path)
    assert abs(g["duplicate"].numbers["max_cosine"]) < 0.2  # independent random heads
    assert g["ledger"].numbers["diff_usd"] == 0 and g["ledger"].numbers["head_in_chain"]
    assert g["theta_roundtrip"].numbers["max_abs_diff"] < 1e-7

    assert main(["check", str(b.path), "--json", "--against", str(tmp_path / "repo" / "submissions")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and len(out["gates"]) == 8 and out["competition"] == "tinyrouter"


def test_nan_weights_fail_weight_sanity(tmp_path):
    _, b = _pack(tmp_path)
    head = np.load(b.path / "head_weights.npy")
    head[2, 5] = np.nan
    head[0, 0] = np.inf
    np.save(b.path / "head_weights.npy", head)
    g = _gates(check_bundle(b.path))
    assert g["weight_sanity"].status == "fail"
    assert g["weight_sanity"].numbers["nan"] == 1 and g["weight_sanity"].numbers["inf"] == 1
    assert "1 NaN and 1 Inf" in g["weight_sanity"].reason
    # a NaN cosine is neither near nor far: the duplicate gate must not pass it as "distinct"
    _, prior = _pack(tmp_path, "r0", seed=5)
    g = _gates(check_bundle(b.path, against=tmp_path / "repo" / "submissions"))
    assert g["duplicate"].status == "fail" and "NaN/Inf" in g["duplicate"].reason
    # and a NaN prior is skipped, not reported as the closest match
    g = _gates(check_bundle(prior.path, against=tmp_path / "repo" / "submissions"))
    assert g["duplicate"].status == "warn" and g["duplicate"].numbers["skipped"] == 1
    # a weights file that is not .npy at all: one plain reason, no numpy pickle advice
    (b.path / "head_weights.npy").write_text("garbage\n")
    g = _gates(check_bundle(b.path))
    assert "not in .npy format" in g["weight_sanity"].reason and "pickle" not in g["weight_sanity"].reason


def test_all_zero_head_fails_weight_sanity(tmp_path):
    theta = np.concatenate([np.zeros(6 * 1024), np.ones(7 * 1024)])
    _, b = _pack(tmp_path, theta=theta)
    g = _gates(check_bundle(b.path))
    assert g["weight_sanity"].status == "fail" and "all zeros" in g["weight_sanity"].reason
    assert g["weight_sanity"].numbers["head_nonzero"] == 0
    assert g["receipt"].status == g["ledger"].status == g["theta_roundtrip"].status == "pass"


def test_wrong_shape_and_huge_weights_fail_weight_sanity(tmp_path, capsys):
    _, b = _pack(tmp_path)
    head = np.load(b.path / "head_weights.npy")
    np.save(b.path / "head_weights.npy", head[:5])  # (5, 1024): a row missing
    g = _gates(check_bundle(b.path))
    assert g["weight_sanity"].status == "fail"
    assert g["weight_sanity"].numbers["head_shape"] == [5, 1024]
    assert "head_shape: got (5, 1024), expected (6, 1024)" in g["weight_sanity"].reason
    assert "param_count: got 12288, expected 13312" in g["weight_sanity"].reason
    assert main(["check", str(b.path)]) == 1
    assert "FAIL  weight_sanity" in capsys.readouterr().out

    head[1, 1] = 3e6
    svf = np.load(b.path / "svf_scales.npy")
    svf[10] = -0.5
    np.save(b.path / "head_weights.npy", head)
    np.save(b.path / "svf_scales.npy", svf)
    reason = _gates(check_bundle(b.path))["weight_sanity"].reason
    assert "head_weights_exceed_max: max |w| 3e+06 > 1e+06" in reason and "1 SVF scales are not positive" in reason


def test_near_duplicate_head_fails_duplicate(tmp_path):
    prior_run, prior = _pack(tmp_path, "r0", seed=3)
    theta = np.load(prior_run.best_theta)
    head = theta[:6144].reshape(6, 1024).copy()
    rng = np.random.RandomState(99)
    head[:3] += rng.randn(1024) * 0.5  # the same shift on every model row: same argmax
    head += rng.randn(6, 1024) * 0.005  # and a little noise
    near = np.concatenate([head.ravel(), theta[6144:]])
    _, b = _pack(tmp_path, "r1", theta=near)
    g = _gates(check_bundle(b.path, against=tmp_path / "repo" / "submissions"))
    d = g["duplicate"]
    assert d.status == "fail" and d.numbers["closest"] == str(prior.path)
    assert d.numbers["max_cosine"] >= 0.99
    # the same prior given as the king is reported as the king
    g = _gates(check_bundle(b.path, king=prior.path))
    assert g["duplicate"].status == "fail" and g["duplicate"].numbers["closest_origin"] == "king"


def test_submitted_bundles_in_history_count_as_priors(tmp_path):
    _, prior = _pack(tmp_path, "r0", seed=3)
    run, b = _pack(tmp_path, "r1", theta=np.load(tmp_path / "runs" / "r0" / "best_theta.npy"))
    # only packed, never submitted: not a prior
    assert _gates(check_bundle(b.path))["duplicate"].status == "warn"
    # once submitted (pushed), the history alone makes it a prior: no --against needed
    SubmissionHistory.open().append(
        "submit", miner="carol", bundle=str(prior.path), bundle_hash=prior.hash, pushed=True, outcome="pushed"
    )
    g = _gates(check_bundle(b.path))
    assert g["duplicate"].status == "fail" and g["duplicate"].numbers["max_cosine"] == pytest.approx(1.0)
    assert g["duplicate"].numbers["closest_origin"] == "history"


def test_cosine_ignores_per_group_shifts_and_scale():
    rng = np.random.RandomState(0)
    a = rng.randn(6, 64)
    b = 3.0 * a
    b[:3] += rng.randn(64)
    b[3:] += rng.randn(64)
    assert head_cosine(a, b, 3) == pytest.approx(1.0)
    assert abs(head_cosine(a, rng.randn(6, 64), 3)) < 0.3


def test_two_generations_fail_receipt(tmp_path):
    _, b = _pack(tmp_path, generations=2)
    g = _gates(check_bundle(b.path))
    assert g["receipt"].status == "fail" and g["receipt"].numbers["fitness_entries"] == 2
    assert g["receipt"].reason.startswith("receipt_fitness_history_too_short: need > 2 entries (>= 3 generations)")
    assert g["weight_sanity"].status == g["ledger"].status == "pass"


def test_cached_run_is_refused_before_packing_and_a_zero_cost_receipt_fails(tmp_path):
    run = make_run(tmp_path / "runs" / "r0", paid_calls=0)
    with pytest.raises(InputError, match=r"made no paid call .*receipt_cost_zero_or_missing"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    assert not (tmp_path / "repo" / "submissions" / "alice").exists()
    _, b = _pack(tmp_path)
    r = json.loads((b.path / "receipt.json").read_text())
    r["total_cost_usd"] = 0
    (b.path / "receipt.json").write_text(json.dumps(r))
    g = _gates(check_bundle(b.path))
    assert g["receipt"].status == "fail" and g["receipt"].reason.startswith("receipt_cost_zero_or_missing")
    assert g["schema"].status == "fail" and "receipt_total_cost_invalid" in g["schema"].reason


def test_receipt_missing_and_mistyped_fields_fail_receipt(tmp_path):
    _, b = _pack(tmp_path)
    r = json.loads((b.path / "receipt.json").read_text())
    del r["seed"]
    r["popsize"] = "32"
    (b.path / "receipt.json").write_text(json.dumps(r))
    reason = _gates(check_bundle(b.path))["receipt"].reason
    assert "seed missing" in reason and "popsize is str" in reason


def test_receipt_cost_not_matching_ledger_fails_ledger(tmp_path):
    _, b = _pack(tmp_path)
    r = json.loads((b.path / "receipt.json").read_text())
    r["total_cost_usd"] += 0.10
    (b.path / "receipt.json").write_text(json.dumps(r))
    g = _gates(check_bundle(b.path))
    assert g["ledger"].status == "fail" and g["ledger"].numbers["diff_usd"] == pytest.approx(0.10)
    assert g["receipt"].status == "pass"
    # within $0.05 passes
    r["total_cost_usd"] -= 0.07
    (b.path / "receipt.json").write_text(json.dumps(r))
    assert _gates(check_bundle(b.path))["ledger"].status == "pass"


def test_tampered_ledger_fails_ledger_gate(tmp_path):
    run, b = _pack(tmp_path)
    lines = run.ledger.read_text().splitlines(keepends=True)
    run.ledger.write_text("".join(lines[:1] + lines[2:]))  # a record deleted
    g = _gates(check_bundle(b.path))
    assert g["ledger"].status == "fail" and "does not verify at line 2" in g["ledger"].reason


def test_schema_gate_compares_with_the_configured_pool(tmp_path):
    _, b = _pack(tmp_path)
    g = _gates(check_bundle(b.path, pool_models=[MODELS[0], MODELS[2], MODELS[1]]))
    assert g["schema"].status == "fail" and "order matters" in g["schema"].reason
    assert _gates(check_bundle(b.path, pool_models=MODELS))["schema"].status == "pass"
    r = json.loads((b.path / "receipt.json").read_text())
    r["n_total"] = 13_000
    (b.path / "receipt.json").write_text(json.dumps(r))
    g = _gates(check_bundle(b.path, pool_models=MODELS))
    assert g["schema"].status == "fail" and g["schema"].numbers["actual_total"] == 13_312


def test_theta_roundtrip_catches_a_bundle_that_is_not_the_run(tmp_path):
    run, b = _pack(tmp_path)
    svf = np.load(b.path / "svf_scales.npy")
    svf[0] *= 1.01
    np.save(b.path / "svf_scales.npy", svf)
    g = _gates(check_bundle(b.path))
    assert g["theta_roundtrip"].status == "fail" and g["theta_roundtrip"].numbers["max_abs_diff"] > 1e-3
    # no way to find the run: the gate says how to give it
    g = _gates(check_bundle(b.path, history=tmp_path / "other-history.jsonl"))
    assert g["theta_roundtrip"].status == "fail" and "--run" in g["theta_roundtrip"].reason
    g = _gates(check_bundle(b.path, history=tmp_path / "other-history.jsonl", run_dir=run.path))
    assert g["theta_roundtrip"].status == "fail" and g["ledger"].status == "pass"


def test_rate_limit_counts_pushed_attempts_in_the_last_day(tmp_path):
    _, b = _pack(tmp_path)
    hist = SubmissionHistory.open()
    hist.append("submit", miner="alice", bundle="/x", bundle_hash="other", pushed=False, outcome="failed")
    hist.append("submit", miner="bob", bundle="/y", bundle_hash="other", pushed=True, outcome="pushed")
    assert _gates(check_bundle(b.path))["rate_limit"].status == "pass"
    hist.append("submit", miner="alice", bundle="/z", bundle_hash="other2", pushed=True, outcome="pushed")
    g = _gates(check_bundle(b.path))["rate_limit"]
    assert g.status == "fail" and g.numbers["attempts_24h"] == 1 and "next submission allowed" in g.reason
    import time

    assert _gates(check_bundle(b.path, now=time.time() + 24 * 3600 + 5))["rate_limit"].status == "pass"


def test_minirouter_bundle_says_which_gates_do_not_apply(tmp_path):
    run = make_run(tmp_path / "r")
    b = pack_run(run.path, "alice", "minirouter", out=tmp_path / "repo")
    g = _gates(check_bundle(b.path, miner="alice"))
    assert g["ledger"].status == "warn" and "does not apply" in g["ledger"].reason
    assert g["receipt"].status == "warn" and "does not apply" in g["receipt"].reason
    assert g["weight_sanity"].status == "pass" and g["theta_roundtrip"].status == "pass"
    assert g["schema"].status == "pass" and g["rate_limit"].status == "warn"  # MiniRouter has none
    assert check_bundle(b.path, miner="alice").ok


def test_check_of_a_non_bundle_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["check", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a submission bundle" in err


def test_check_finds_the_run_under_runs_of_the_current_directory(tmp_path, monkeypatch):
    work = tmp_path / "ws"
    run = make_run(work / "runs" / "r7")
    b = pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    other = tmp_path / "fresh-history.jsonl"  # no pack record to follow
    monkeypatch.chdir(work)
    rep = check_bundle(b.path, history=other)
    from pathlib import Path

    assert Path(rep.run_dir).resolve() == run.path.resolve()
    assert _gates(rep)["theta_roundtrip"].status == "pass"


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(0.01, 100.0), shift_m=st.floats(-5, 5), shift_r=st.floats(-5, 5))
def test_cosine_is_invariant_to_what_argmax_cannot_see(seed, scale, shift_m, shift_r):
    rng = np.random.RandomState(seed)
    a = rng.randn(6, 32)
    b = scale * a
    b[:3] += shift_m * rng.randn(32)  # one vector added to every model row
    b[3:] += shift_r * rng.randn(32)  # another to every role row
    assert head_cosine(a, b, 3) == pytest.approx(1.0, abs=1e-9)
    assert head_cosine(a, -a, 3) == pytest.approx(-1.0, abs=1e-9)


def test_unreadable_run_theta_fails_the_round_trip(tmp_path):
    run, b = _pack(tmp_path)
    run.best_theta.write_bytes(b"not an npy file")
    g = _gates(check_bundle(b.path))["theta_roundtrip"]
    assert g.status == "fail" and "not a readable .npy" in g.reason


def test_check_compares_with_the_checkouts_submissions_by_default(tmp_path, capsys):
    # Without --against, `trinity check` takes the prior bundles from the submissions/ folder the
    # bundle sits in; a copy of a prior head is caught there instead of a "nothing to compare" WARN.
    _, prior = _pack(tmp_path, "r0", seed=3)
    _, b = _pack(tmp_path, "r1", theta=np.load(tmp_path / "runs" / "r0" / "best_theta.npy"))
    assert main(["check", str(b.path), "--json"]) == 1
    dup = {g["name"]: g for g in json.loads(capsys.readouterr().out)["gates"]}["duplicate"]
    assert dup["status"] == "fail" and dup["numbers"]["closest"] == str(prior.path)
