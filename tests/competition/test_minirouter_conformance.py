"""MiniRouter conformance (mini-router/minirouter @ 6a1e0f4): its own 4-model bundle layout is
accepted, θ length follows (n_models + 3)·1024 + 7168 for the validator's pool, summaries carry its
recommended keys, the PR body passes its `submission-pr-check.yml` (regexes re-implemented here from
reading the workflow), and the promotion rule of its validator."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "submission"))
from submission_helpers import isolated_env, make_run  # noqa: F401 (autouse fixture)

from trinity.analysis.score import promotion, promotion_items
from trinity.competition.pr import pr_body, pr_missing
from trinity.competition.profiles import MINIROUTER_PROFILE as MR
from trinity.data.questions import Question
from trinity.submission.gates import check_bundle
from trinity.submission.pack import pack_run


def _g(rep) -> dict:
    return {r.name: r for r in rep.results}


def _their_style_bundle(root: Path, n_models: int, theta_len: int, pool: list[str] | None) -> Path:
    """A bundle laid out like MiniRouter's committed submissions/final_model (summary keys, a
    one-row history with `generation`/`gen_mean_fitness`), with our numbers."""
    d = root / "submissions" / "final_model"
    d.mkdir(parents=True)
    rng = np.random.RandomState(0)
    n_head = (n_models + 3) * 1024
    theta = np.concatenate([rng.randn(n_head) * 0.1, 1.0 + 0.01 * rng.randn(theta_len - n_head)])
    np.save(d / "best_theta.npy", theta)
    summary = {
        "benchmark": "math500",
        "n_total": theta_len,
        "popsize": 4,
        "m_cma": 4,
        "generations": 1,
        "best_fitness": 0.25625,
        "run_dir": "/home/someone/experiments/math500/test-01",
    }
    if pool is not None:
        summary["pool"] = pool
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "history.json").write_text(
        json.dumps(
            [
                {
                    "generation": 0,
                    "gen_mean_fitness": 0.066,
                    "gen_max_fitness": 0.256,
                    "best_fitness": 0.256,
                    "seconds": 175.8,
                }
            ]
        )
    )
    return d


def test_a_four_model_minirouter_bundle_is_accepted(tmp_path):
    pool = ["nemotron-3-super", "gemma-4-31b", "gpt-oss-120b", "qwen3-coder-480b-a35b"]
    b = _their_style_bundle(tmp_path, 4, 14_336, pool)
    rep = check_bundle(b)  # no --miner, no run: MiniRouter's validator needs neither
    g = _g(rep)
    assert rep.ok and rep.competition == "minirouter", rep.lines()
    assert g["weight_sanity"].status == "pass" and g["weight_sanity"].numbers["expected_total"] == 14_336
    assert g["receipt"].status == "warn" and "1 generation" in g["receipt"].reason  # advisory, not a rejection
    assert g["rate_limit"].status == "warn" and g["theta_roundtrip"].status == "warn"
    assert rep.verdict() == "OK — bundle looks submit-ready."


def test_theta_length_follows_the_validators_pool(tmp_path):
    # three pool names, four models' worth of θ: their local validator only warns; its evaluation of
    # the pool cannot load it, so ours fails it
    b = _their_style_bundle(tmp_path, 4, 14_336, ["deepseek-v3p2", "glm-5", "kimi-k2p5"])
    w = _g(check_bundle(b))["weight_sanity"]
    assert w.status == "fail" and w.reason.startswith("best_theta.npy length 14336 != expected n_total=13312")
    # no pool in summary.json: the 3-model Chutes pool is assumed, and the missing key is reported
    (tmp_path / "x").mkdir()
    b2 = _their_style_bundle(tmp_path / "x", 3, 13_312, None)
    rep = check_bundle(b2)
    assert _g(rep)["weight_sanity"].status == "pass"
    assert (
        _g(rep)["schema"].status == "warn" and "summary.json missing recommended keys: pool" in _g(rep)["schema"].reason
    )


def test_packed_summary_carries_the_recommended_keys(tmp_path):
    run = make_run(
        tmp_path / "r",
        models=["deepseek-ai/DeepSeek-V3.2-TEE", "zai-org/GLM-5-TEE", "moonshotai/Kimi-K2.5-TEE"],
        pool="chutes",
        paid_calls=0,
    )
    b = pack_run(run.path, "alice", None, out=tmp_path / "repo")  # chutes → minirouter by default
    s = json.loads((b.path / "summary.json").read_text())
    assert b.format == "minirouter" and b.path.name == "final_model"
    assert {"benchmark", "n_total", "best_fitness", "pool"} <= set(s)
    assert s["pool"] == ["deepseek-v3p2", "glm-5", "kimi-k2p5"] and s["n_total"] == 13_312
    assert check_bundle(b.path).ok


# ---- the PR body check (.github/workflows/submission-pr-check.yml), re-implemented ----------------

_FLAGS = re.IGNORECASE | re.MULTILINE
_FIELDS = [
    ("Miner name", r"^-\s*miner name\s*:\s*(.*)$"),
    ("owner_id", r"^-\s*`?owner_id`?\s*:\s*(.*)$"),
    ("key_id", r"^-\s*`?key_id`?\s*:\s*(.*)$"),
    ("Benchmark", r"^-\s*benchmark\s*:\s*(.*)$"),
    ("Local eval score", r"^-\s*local eval score\s*:\s*(.*)$"),
]
_CHECKS = [
    ("best_theta", r"^-\s*\[( |x|X)\]\s*.*best_theta\.npy.*$"),
    ("summary", r"^-\s*\[( |x|X)\]\s*.*summary\.json.*$"),
    ("validate", r"^-\s*\[( |x|X)\]\s*.*validate_submission\.py.*$"),
]


def _pr_check_problems(body: str) -> list[str]:
    problems = []
    for name, pat in _FIELDS:
        m = re.search(pat, body, _FLAGS)
        if not (m.group(1).strip() if m else ""):
            problems.append(f"Missing value for **{name}**")
    for name, pat in _CHECKS:
        m = re.search(pat, body, _FLAGS)
        if not (m and re.search("x", m.group(1), re.IGNORECASE)):
            problems.append(f"Checklist item not checked: **{name}**")
    return problems


def test_pr_body_passes_their_check_and_refuses_without_the_minibridge_ids():
    info = {
        "miner": "alice",
        "benchmark": "math500",
        "pool": "chutes",
        "pool_names": ["deepseek-v3p2", "glm-5"],
        "run_id": "r1",
        "n_total": 13_312,
        "gates_ok": True,
        "owner_id": "own-7",
        "key_id": "key-7",
        "local_score": "0.6500",
        "local_score_settings": "trinity eval",
    }
    body = pr_body(MR, info)
    assert _pr_check_problems(body) == []
    assert "- Branch: `sn74-alice`" in body and MR.branch("alice", None) == "sn74-alice"
    assert "- [x] `submissions/final_model/best_theta.npy` included" in body
    assert pr_missing(MR, info) == []
    # without the MiniBridge identity the tool refuses before posting (their regex would even read the
    # next line as the value of an empty `owner_id`: we do not rely on that)
    bare = {k: v for k, v in info.items() if k not in ("owner_id", "key_id")}
    assert [m.split(":")[0] for m in pr_missing(MR, bare)] == [
        "MiniRouter's PR check needs a non-empty `owner_id` (your MiniBridge owner id)",
        "MiniRouter's PR check needs a non-empty `key_id` (your MiniBridge key id)",
    ]
    # with failing gates the boxes stay unticked, and their check says so
    problems = _pr_check_problems(pr_body(MR, {**info, "gates_ok": False}))
    assert problems == [
        "Checklist item not checked: **best_theta**",
        "Checklist item not checked: **summary**",
        "Checklist item not checked: **validate**",
    ]
    # no local eval: a non-empty honest value, not a made-up score
    assert "- Local eval score: not measured locally" in pr_body(MR, {**info, "local_score": None})


# ---- the promotion rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "score, king, promotes",
    [
        (0.80, None, False),  # ≥ 0.8 but not above the default king (the threshold itself)
        (0.85, None, True),
        (0.79, None, False),
        (0.85, 0.85, False),
        (0.86, 0.85, True),
        (0.82, 0.70, True),
        (0.75, 0.70, False),
    ],
)  # above the king but under the 0.8 threshold
def test_promotion_rule(score, king, promotes):
    assert promotion(score, king) is promotes


def test_promotion_items_are_the_first_20_after_a_seed_0_shuffle():
    qs = [Question(f"m{i:03d}", "math500", f"q{i}", str(i)) for i in range(40)] + [
        Question("x1", "mmlu", "other", "A", "mc")
    ]
    items, n = promotion_items(qs)
    expected = [q for q in qs if q.benchmark == "math500"]
    random.Random(0).shuffle(expected)
    assert n == 40 and [q.id for q in items] == [q.id for q in expected[:20]]
    assert (MR.scoring.split, MR.scoring.n_items, MR.scoring.shuffle_seed, MR.scoring.threshold) == ("test", 20, 0, 0.8)
