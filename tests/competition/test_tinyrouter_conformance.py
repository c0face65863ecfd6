"""TinyRouter conformance: receipts, ledger export, gate verdicts and PR text pinned to the formats of
James-CUDA/Gittensor-TinyRouter @ 1767d1f (golden strings written from reading their code; none of
it is vendored). `trinity check` must never PASS where their preflight rejects, and must name the
same reason code."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "submission"))
from submission_helpers import MODELS, SHORT, isolated_env, make_run  # noqa: F401 (autouse fixture)

from trinity.competition.pr import pr_body, pr_title
from trinity.competition.profiles import TINYROUTER_PROFILE as TR
from trinity.submission.gates import check_bundle
from trinity.submission.ledger_export import verify_mpc_chain
from trinity.submission.pack import pack_run


def _g(rep) -> dict:
    return {r.name: r for r in rep.results}


def _pack(tmp_path, name="r1", **kw):
    run = make_run(tmp_path / "runs" / name, **kw)
    return run, pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")


def test_receipt_golden_fields(tmp_path):
    run, b = _pack(tmp_path, generations=4)
    r = json.loads((b.path / "receipt.json").read_text())
    # schema.py REQUIRED_RECEIPT_FIELDS, with the values their gates accept
    assert {"benchmark", "total_cost_usd", "fitness_history", "generations", "pool_models", "n_total"} <= set(r)
    assert r["benchmark"] == "composite" and r["n_total"] == 13_312
    assert r["pool_models"] == ["qwen3.5-35b-a3b", "gemini-3.1-flash-lite", "deepseek-v4-flash"]
    assert r["total_cost_usd"] > 0 and r["generations"] == len(r["fitness_history"]) == 4
    assert [row["generation"] for row in r["fitness_history"]] == [1, 2, 3, 4]
    assert set(r["fitness_history"][0]) == {"generation", "mean_fitness", "max_fitness", "best_fitness"}


def test_ledger_export_is_their_mpc_chain(tmp_path):
    run, b = _pack(tmp_path)
    r = json.loads((b.path / "receipt.json").read_text())
    lines = (run.path / r["ledger_export"]["file"]).read_text().splitlines()
    # cost_ledger.py: payload '{"m":"<short>","p":<int>,"c":<int>}', h = sha256(prev_h + payload), prev "" first
    first = '{"m":"qwen3.5-35b-a3b","p":900000,"c":300000}'
    h1 = hashlib.sha256(first.encode()).hexdigest()
    assert lines[0] == first[:-1] + f',"h":"{h1}"}}'
    second = '{"m":"gemini-3.1-flash-lite","p":900000,"c":300000}'
    assert json.loads(lines[1])["h"] == hashlib.sha256((h1 + second).encode()).hexdigest()
    assert verify_mpc_chain(run.path / r["ledger_export"]["file"]) == (True, 3, "")
    # at their prices (openrouter_pricing.py) the total is the receipt's, within their $0.05
    by_hand = 0.9 * 0.14 + 0.3 * 1.00 + 0.9 * 0.25 + 0.3 * 1.50 + 0.9 * 0.09 + 0.3 * 0.18
    assert r["ledger_export"]["total_usd_at_competition_prices"] == pytest.approx(by_hand, abs=1e-6)
    # a tampered line breaks it, as their verifier says
    bad = run.path / "bad.jsonl"
    bad.write_text("\n".join([lines[0].replace("900000", "900001")] + lines[1:]) + "\n")
    ok, n, why = verify_mpc_chain(bad)
    assert not ok and n == 0 and "hash mismatch" in why


def test_head_with_role_rows_scaled_by_20_is_a_duplicate(tmp_path):
    prior_run, prior = _pack(tmp_path, "r0", seed=3)
    theta = np.load(prior_run.best_theta)
    head = theta[:6144].reshape(6, 1024).copy()
    head[3:] *= 20.0  # routes identically: argmax of the role rows is unchanged
    _, b = _pack(tmp_path, "r1", theta=np.concatenate([head.ravel(), theta[6144:]]))
    d = _g(check_bundle(b.path, against=tmp_path / "repo" / "submissions"))["duplicate"]
    assert d.status == "fail" and d.numbers["max_cosine"] == pytest.approx(1.0)
    assert d.reason.startswith("duplicate_of_alice_gen_1_head_sim_1.0000")
    # the threshold is strict, as theirs (`h_sim > 0.99`)
    assert d.numbers["rule"] == "cosine > 0.99"


def test_king_named_by_leaderboard_json_is_compared(tmp_path):
    run, king = _pack(tmp_path, "r0", seed=3)
    (tmp_path / "repo" / "leaderboard.json").write_text(
        json.dumps({"competition": {"best_miner": "bob", "best_generation": 1}, "benchmarks": {}})
    )
    bob = tmp_path / "repo" / "submissions" / "bob" / "1"
    king.path.rename(bob.parent.mkdir(parents=True) or bob)
    _, b = _pack(tmp_path, "r1", theta=np.load(run.best_theta))
    d = _g(check_bundle(b.path))["duplicate"]  # no --against, no --king: leaderboard.json names it
    assert d.status == "fail" and d.reason.startswith("duplicate_of_king_bob_gen_1_head_sim_1.0000")


def test_an_attempt_two_hours_old_in_leaderboard_json_is_rate_limited(tmp_path):
    _, b = _pack(tmp_path)
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 2 * 3600))
    lb = {"benchmarks": {"composite": {"attempts": [{"miner": "alice", "generation": 0, "pr": 7, "timestamp": ts}]}}}
    (tmp_path / "repo" / "leaderboard.json").write_text(json.dumps(lb))
    rep = check_bundle(b.path)
    g = _g(rep)["rate_limit"]
    assert g.status == "fail" and g.reason.startswith("rate_limited: 1 submission(s) in the last 1 days (max 1)")
    assert rep.verdict().startswith("[preflight] REJECTED: rate_limited: 1 submission(s)")
    # another miner's attempt, or one 25 h old, does not count (theirs: miner equal and ts > cutoff)
    lb["benchmarks"]["composite"]["attempts"][0].update(
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 25 * 3600))
    )
    (tmp_path / "repo" / "leaderboard.json").write_text(json.dumps(lb))
    assert _g(check_bundle(b.path))["rate_limit"].status == "pass"


def test_receipt_with_slug_names_is_rejected_with_their_code(tmp_path):
    _, b = _pack(tmp_path)
    r = json.loads((b.path / "receipt.json").read_text())
    r["pool_models"] = MODELS  # the OpenRouter slugs, as our receipts used to write them
    (b.path / "receipt.json").write_text(json.dumps(r))
    s = _g(check_bundle(b.path))["schema"]
    assert s.status == "fail"
    assert s.reason.startswith(
        "receipt_pool_models_mismatch: missing=['deepseek-v4-flash', 'gemini-3.1-flash-lite', 'qwen3.5-35b-a3b'] "
        "extra=['deepseek/deepseek-v4-flash', 'google/gemini-3.1-flash-lite', 'qwen/qwen3.5-35b-a3b']"
    )
    r["pool_models"], r["benchmark"] = SHORT, "practice"
    (b.path / "receipt.json").write_text(json.dumps(r))
    s = _g(check_bundle(b.path))["schema"]
    assert s.reason.startswith("receipt_benchmark_mismatch: receipt 'practice' != expected 'composite'")


def test_a_small_head_is_rejected_whatever_the_receipt_says(tmp_path):
    # (6, 64): our old gate took the shape from the receipt; theirs wants exactly (6, 1024), 13,312
    run, b = _pack(tmp_path, hidden=64)
    rep = check_bundle(b.path)
    w = _g(rep)["weight_sanity"]
    assert w.status == "fail" and w.reason.startswith("param_count: got 832, expected 13312")
    assert "head_shape: got (6, 64), expected (6, 1024)" in w.reason
    assert _g(rep)["schema"].reason.startswith("receipt_n_total_mismatch: got 832, expected 13312")
    assert rep.verdict() == "[preflight] REJECTED: param_count: got 832, expected 13312"


def test_frozen_files_changed_in_the_checkout_fail(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "scripts").mkdir()
    (repo / "scripts" / "pr_eval.py").write_text("# frozen\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), *env, "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), *env, "commit", "-qm", "base"], check=True)
    _, b = _pack(tmp_path)
    assert _g(check_bundle(b.path))["frozen_files"].status == "pass"
    (repo / "scripts" / "pr_eval.py").write_text("# edited\n")
    f = _g(check_bundle(b.path))["frozen_files"]
    assert f.status == "fail" and "scripts/pr_eval.py" in f.reason and f.numbers["touched"] == ["scripts/pr_eval.py"]


def test_their_advisories_warn_and_never_block(tmp_path):
    _, b = _pack(tmp_path)
    r = json.loads((b.path / "receipt.json").read_text())
    r["fitness_history"][2]["best_fitness"] = 0.0  # best-so-far cannot drop
    (b.path / "receipt.json").write_text(json.dumps(r))
    head = np.load(b.path / "head_weights.npy")
    head[:3] = head[0]  # every model row equal: one model for every query
    np.save(b.path / "head_weights.npy", head)
    rep = check_bundle(b.path)
    adv = {a.name: a for a in rep.advisories}
    assert adv["fitness_history_sequence"].status == "warn"
    assert adv["fitness_history_sequence"].reason.startswith("receipt_fitness_best_decreased: generation 3")
    assert adv["head_routing_diversity"].reason.startswith("head_agent_rows_collapsed")
    assert adv["ledger_call_volume"].reason.startswith("ledger_call_volume_low: 3 ledger row(s)")
    assert all(a.status != "fail" for a in rep.advisories)


# ---- PR text: TinyRouter's template, as their pr_bot reads it (logic re-implemented from reading it) ----

_PLACEHOLDERS = (
    r"<!--\s*brief description\s*-->",
    r"\(math500 or mmlu\)",
    r"\(your miner identity\)",
    r"\$xx\.xx",
    r"\(submission number\)",
    r"\(cma-es or other\)",
)
_FIELDS = (
    r"\*\*benchmark:\*\*",
    r"\*\*miner name:\*\*",
    r"\*\*generation:\*\*",
    r"\*\*training method:\*\*",
    r"\*\*training cost:\*\*",
)


def _field(body: str, label: str) -> str | None:
    m = re.search(label, body, flags=re.IGNORECASE)
    if not m:
        return None
    rest = body[m.end() :]
    inline = rest.split("\n", 1)[0].strip()
    return inline or None


def _bot_reads_as_routing_submission(title: str, body: str) -> tuple[bool, bool]:
    checked = re.search(r"-\s*\[x\]\s*\*\*routing head submission\*\*", body, re.IGNORECASE) is not None
    routing = checked or any(
        k in f"{title}\n{body}".lower() for k in ("[submission]", "head_weights.npy", "svf_scales.npy", "receipt.json")
    )
    filled = all((v := _field(body, f)) and not any(re.search(p, v.lower()) for p in _PLACEHOLDERS) for f in _FIELDS)
    return routing and checked, filled


def test_pr_title_and_body_golden():
    info = {
        "miner": "alice",
        "n": 3,
        "benchmark": "composite",
        "run_id": "r9",
        "generations": 12,
        "popsize": 32,
        "m_cma": 16,
        "sigma0": 0.1,
        "best_fitness": 0.61234,
        "n_models": 3,
        "hidden": 1024,
        "n_svf": 7168,
        "total_cost_usd": 4.56789,
        "ledger_head_hash": "ab" * 32,
        "gates_ok": True,
        "bundle": "submissions/alice/3",
    }
    # the benchmark carries its figure: the local eval score when measured, else the best fitness
    assert pr_title(TR, info) == "[submission] alice gen 3 — composite 0.6123 fitness"
    assert pr_title(TR, {**info, "local_score": "0.7310"}) == "[submission] alice gen 3 — composite 0.7310"
    assert TR.branch("alice", 3) == "submission/alice-gen3"
    body = pr_body(TR, info, ["- PASS **weight_sanity**: ok"])
    assert "- [x] **Routing head submission** — I trained a coordinator head" in body
    assert "**Benchmark:** composite (one head across math500 + mmlu + livecodebench)" in body
    assert "**Miner name:** alice" in body and "**Generation:** 3" in body
    assert "**Training method:** separable CMA-ES (minertui), 12 generations, popsize 32, m 16, σ0 0.1" in body
    assert "**Training cost:** $4.57 (from cost ledger; $4.567890 exact" in body
    assert "- [x] `head_weights.npy` — linear head W (6 × 1024) float32" in body
    small = pr_body(TR, {**info, "hidden": 64, "n_svf": 448}, [])  # the bundle's real shapes
    assert "linear head W (6 × 64) float32" in small and "SVF singular-value scales (448,) float32" in small
    assert "- [ ] I trained this head myself" in body  # the miner's own statement: left to the miner
    assert "## General improvement" not in body
    assert _bot_reads_as_routing_submission(pr_title(TR, info), body) == (True, True)
    # the template itself, unfilled, is not a filled routing section
    tmpl = body.replace("**Miner name:** alice", "**Miner name:** (your miner identity)")
    assert _bot_reads_as_routing_submission("x", tmpl) == (True, False)


def test_check_advises_when_the_run_was_trained_under_another_session_protocol(tmp_path):
    run, b = _pack(tmp_path)
    adv = {a.name: a for a in check_bundle(b.path, run_dir=run.path).advisories}
    assert adv["session_protocol"].status == "warn"  # a run without a recorded protocol reads as open
    assert "trained under the open session protocol, not TinyRouter's" in adv["session_protocol"].reason
    meta = json.loads((run.path / "run.json").read_text())
    meta["protocol"] = "tinyrouter"
    (run.path / "run.json").write_text(json.dumps(meta))
    adv = {a.name: a for a in check_bundle(b.path, run_dir=run.path).advisories}
    assert adv["session_protocol"].status == "pass"
