"""The tinyrouter-m1 profile against TinyRouter's Milestone-1 code (@1767d1f): hand-made packs
for every gate verdict, and score examples worked by hand from their formula.

The expected verdicts were taken by running their `scripts/preflight_milestone1.py` on these
same packs (from a clone in /tmp, not committed): True = exit 0, False = rejected."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from trinity.competition import m1
from trinity.errors import InputError


def make_pack(root: Path, miner: str, config="5-domain", pool="penultimate", d=64, nd=5, ndiff=5, q=None, nan=False):
    p = m1.submission_dir(root, miner)
    p.mkdir(parents=True)
    Wd, Wf = np.zeros((nd, d), np.float32), np.zeros((ndiff, d), np.float32)
    if nan:
        Wd[0, 0] = np.nan
    (p / "config.json").write_text(json.dumps({"config": config, "pool": pool, "d_h": d}))
    np.save(p / "W_domain.npy", Wd)
    np.save(p / "W_diff.npy", Wf)
    if q is not None:
        np.save(p / "attention_query.npy", np.zeros(q, np.float32))
    return p


def _ts(ago_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - ago_s))


# name: (pack kwargs, their preflight passes?, the first failing gate of ours)
CASES = {
    "ok": (dict(miner="ok"), True, None),
    "exactly_1M": (dict(miner="m1M", config="20-domain", d=40000, nd=20), False, "weight_sanity"),
    "just_under_1M": (dict(miner="under", d=99999), True, None),
    "attentive_999999": (dict(miner="att", pool="attentive", d=90909, q=90909), True, None),
    "attentive_1000010": (dict(miner="attover", pool="attentive", d=90910, q=90910), False, "weight_sanity"),
    "nan": (dict(miner="nan", nan=True), False, "weight_sanity"),
    "wrong_shape_domain": (dict(miner="shape", nd=4), False, "weight_sanity"),
    "wrong_shape_diff": (dict(miner="shape2", ndiff=4), False, "weight_sanity"),
    "config_vs_shape": (dict(miner="cfg", config="20-domain", nd=5), False, "weight_sanity"),
    "attentive_no_query": (dict(miner="noq", pool="attentive"), False, "weight_sanity"),
    "attentive_bad_query": (dict(miner="badq", pool="attentive", q=63), False, "weight_sanity"),
    "bad_pool": (dict(miner="pool", pool="mean"), False, "weight_sanity"),
    "unknown_config": (dict(miner="unk", config="7-domain"), False, "weight_sanity"),
    "second_attempt_same_day": (dict(miner="carol"), False, "rate_limit"),
    "attempt_25h_ago": (dict(miner="dave"), True, None),
    "unparseable_ts": (dict(miner="erin"), True, None),
}


@pytest.fixture
def repo(tmp_path):
    rows = [{"miner": "Carol", "ts": _ts(3600)}, {"miner": "dave", "ts": _ts(25 * 3600)}, {"miner": "erin", "ts": "x"}]
    att = m1.attempts_path(tmp_path)
    att.parent.mkdir(parents=True)
    att.write_text("".join(json.dumps(r) + "\n" for r in rows) + "not json\n")
    return tmp_path


@pytest.mark.parametrize("name", list(CASES))
def test_gate_verdicts_match_their_preflight(repo, name):
    kw, passes, first_fail = CASES[name]
    kw = dict(kw)
    miner = kw.pop("miner")
    pack = m1.load_pack(make_pack(repo, miner, **kw))
    gates = m1.run_gates(pack, miner, repo)
    assert [g.name for g in gates] == [g for g, _ in m1.GATES]
    assert all(g.ok for g in gates) is passes
    failed = [g for g in gates if not g.ok]
    assert (failed[0].name if failed else None) == first_fail
    if name == "exactly_1M":
        assert pack.n_params == 1_000_000 and not gates[1].ok and "1,000,000 >= limit" in gates[1].detail
    if name == "nan":
        assert "NaN" in gates[0].detail


def test_rate_limit_counts_the_miner_case_insensitively_within_24h(tmp_path):
    m1.append_attempt(tmp_path, "Bob", "submissions/bob/m1", ok=True)
    assert m1.recent_attempts("bob", tmp_path) == 1
    assert m1.recent_attempts("alice", tmp_path) == 0
    assert m1.recent_attempts("bob", tmp_path, now=time.time() + 86_401) == 0
    row = json.loads(m1.attempts_path(tmp_path).read_text())
    assert set(row) == {"miner", "submission", "ts", "ok", "metrics"} and row["ts"].endswith("Z")


def test_score_worked_by_hand():
    y_dom = ["math", "code", "math", "knowledge"]
    p_dom = ["math", "math", "math", "knowledge"]
    y_dif, p_dif = [1, 2, 3, 4], [1, 3, 3, 5]
    s = m1.score(y_dom, y_dif, p_dom, p_dif)
    assert s.domain_accuracy == 0.75 and s.difficulty_exact == 0.5
    assert s.composite == pytest.approx(0.7 * 0.75 + 0.3 * 0.5) == pytest.approx(0.675)
    assert s.difficulty_within_1 == 1.0 and s.joint_accuracy == 0.5
    # macro-F1 over {code, knowledge, math}: code 0, knowledge 1, math 2·(2/3)·1/(2/3+1) = 0.8
    assert s.domain_macro_f1 == pytest.approx((0 + 1 + 0.8) / 3)
    assert s.per_domain_accuracy == {"code": 0.0, "knowledge": 1.0, "math": 1.0}
    rows = m1.row_composite(np.array([1, 0, 1, 1]), np.array([1, 0, 1, 0]))
    assert rows.mean() == pytest.approx(s.composite)


def test_score_second_example_and_empty():
    s = m1.score(["code"] * 5, [5, 5, 4, 1, 3], ["code", "math", "code", "code", "code"], [5, 3, 4, 2, 3])
    # domain 4/5, exact 3/5 → 0.7·0.8 + 0.3·0.6 = 0.74; ±1: |0|,|2|,|0|,|1|,|0| → 4/5; joint rows 0, 2, 4 → 3/5
    assert s.composite == pytest.approx(0.74)
    assert s.difficulty_within_1 == pytest.approx(0.8) and s.joint_accuracy == pytest.approx(0.6)
    assert m1.score([], [], [], []).composite == 0.0
    with pytest.raises(InputError):
        m1.score(["code"], [1], [], [])


def test_king_margin():
    assert m1.decide(None, 0.1)[0] is True
    assert m1.decide(0.70, 0.72)[0] is True  # ≥ king + 0.02
    assert m1.decide(0.70, 0.7199)[0] is False
    assert m1.decide(0.80, 0.81)[0] is False


def test_text_domains_shapes_and_predict():
    assert m1.encoder_text("2+2?") == "QUERY:\n2+2?\n<Head Input>"
    assert len(m1.DOMAINS_5) == 5 and len(m1.DOMAINS_20) == 20 and m1.domains_of("20") == m1.DOMAINS_20
    assert m1.head_shapes("5-domain") == {"W_domain": (5, 1024), "W_diff": (5, 1024)}
    assert m1.PROFILE.branch("alice", "5") == "submission/alice-m1-5-domain"
    with pytest.raises(InputError, match="5-domain or 20-domain"):
        m1.canonical_config("7-domain")
    Wd = np.zeros((5, 2), np.float32)
    Wd[2, 0] = 1.0
    pack = m1.M1Pack("5-domain", "penultimate", 2, Wd, np.zeros((5, 2), np.float32))
    dom, dif = pack.predict(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert dom == ["knowledge", "math"]  # ties go to the first index
    assert dif == [1, 1]  # 1-based labels
    assert pack.n_params == 20 and pack.problems() == []


def test_attentive_pool_is_softmax_weighted_then_normalised():
    H = np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)
    assert np.allclose(m1.attentive_pool(H, np.zeros(2)), np.array([1.0, 2.0]) / np.sqrt(5))  # mean pool
    h = m1.attentive_pool(H, np.array([0.0, 50.0]))
    assert np.allclose(h, [0.0, 1.0], atol=1e-6)


def test_pack_save_roundtrip_and_refusal(tmp_path):
    pack = m1.M1Pack("20-domain", "attentive", 8, np.ones((20, 8)), np.ones((5, 8)), np.ones(8), meta={"miner": "a"})
    out = pack.save(tmp_path / "p")
    assert sorted(p.name for p in out.iterdir()) == ["W_diff.npy", "W_domain.npy", "attention_query.npy", "config.json"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg == {
        "config": "20-domain",
        "pool": "attentive",
        "d_h": 8,
        "use_key_proj": False,
        "n_domains": 20,
        "n_diff": 5,
        "schema": "tinyrouter-m1-v1",
        "meta": {"miner": "a"},
    }
    back = m1.load_pack(out)
    assert back.n_params == 20 * 8 + 5 * 8 + 8 and np.load(out / "W_domain.npy").dtype == np.float32
    bad = m1.M1Pack("5-domain", "penultimate", 8, np.ones((4, 8)), np.ones((5, 8)))
    with pytest.raises(InputError, match="W_domain shape"):
        bad.save(tmp_path / "q")
    assert not (tmp_path / "q").exists()


def test_load_pack_errors_are_one_line(tmp_path):
    with pytest.raises(InputError, match="not found"):
        m1.load_pack(tmp_path / "nope")
    (tmp_path / "p").mkdir()
    with pytest.raises(InputError, match="no config.json"):
        m1.load_pack(tmp_path / "p")
    (tmp_path / "p" / "config.json").write_text("{bad")
    with pytest.raises(InputError, match="not valid JSON"):
        m1.load_pack(tmp_path / "p")
    (tmp_path / "p" / "config.json").write_text('{"config": "5-domain"}')
    with pytest.raises(InputError, match="no W_domain.npy"):
        m1.load_pack(tmp_path / "p")
    (tmp_path / "p" / "W_domain.npy").write_text("junk")
    (tmp_path / "p" / "W_diff.npy").write_text("junk")
    with pytest.raises(InputError, match="not a readable .npy"):
        m1.load_pack(tmp_path / "p")
