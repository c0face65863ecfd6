"""eval / score / oracle --run on a real tiny cached run (tiny-qwen3, practice setup), made here."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.cli import main
from trinity.data.questions import split_ids
from trinity.io import atomic_write_json, read_jsonl
from trinity.practice.simulation import practice_matrix


@pytest.fixture(scope="session")
def trained_run(tiny_run) -> Path:
    """The session's trained tiny run (tests/conftest.py), shared with the run-status and serve tests."""
    return tiny_run


@pytest.fixture()
def run_dir(trained_run, tmp_path) -> Path:
    """A private copy per test: tests write eval.json, ledgers and journals."""
    d = tmp_path / "run"
    shutil.copytree(trained_run, d, ignore=shutil.ignore_patterns(".lock"))
    return d


def cli(argv, capsys):
    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def routed(run_dir: Path, split: str):
    """An independent recomputation: the run's router on the split, scored on the practice matrix."""
    from trinity.optim.routing import load_trained

    meta = json.loads((run_dir / "run.json").read_text())
    ids = meta["splits"][split]
    by_id = {q.id: q for q in practice_questions()}
    routing = load_trained(run_dir).route([by_id[i] for i in ids])
    m = practice_matrix().subset(ids)
    p = m.accuracy()
    return ids, routing, p, p[np.arange(len(ids)), routing.model_idx]


def test_eval_cached_matches_an_independent_recomputation(run_dir, capsys):
    rc, out, err = cli(["eval", str(run_dir), "--json", "--bootstrap", "500"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    ids, routing, p, correct = routed(run_dir, "test")
    assert rep["n_questions"] == len(ids) == 8
    assert rep["router"]["accuracy"]["point"] == pytest.approx(correct.mean())
    assert [s["accuracy"]["point"] for s in rep["singles"]] == pytest.approx(p.mean(axis=0).tolist())
    assert rep["router"]["avg_turns"] == 1.0 and rep["router"]["cost_usd"] == 0.0
    assert sum(rep["model_mix"].values()) == 8
    best = next(c for c in rep["comparisons"] if c["baseline"] == f"always {rep['best_single']}")
    assert best["diff"]["point"] == pytest.approx(correct.mean() - p.mean(axis=0).max())
    # the claim follows the paired CI, and says "not significant" where McNemar's test disagrees
    if best["outcome"] == "not significant":
        assert "not significant" in rep["claim"] and "beats" not in rep["claim"]
        assert best["diff"]["lo"] > 0 or best["diff"]["hi"] < 0
        assert best["mcnemar"]["p_value"] >= 0.05
    elif best["diff"]["lo"] > 0:
        assert rep["claim"].startswith("beats")
    else:
        assert "beats" not in rep["claim"]
    stored = json.loads((run_dir / "eval.json").read_text())
    assert stored["evaluations"]["cached/test"]["router"] == rep["router"]


def test_eval_table_and_plot(run_dir, tmp_path, capsys):
    png = tmp_path / "eval.png"
    rc, out, err = cli(["eval", str(run_dir), "--no-write", "--bootstrap", "300", "--plot", str(png)], capsys)
    assert rc == 0, err
    assert "Router minus baseline" in out and "random routing" in out
    assert png.stat().st_size > 10_000


def test_eval_live_against_the_simulated_pool(run_dir, capsys, tmp_path, monkeypatch):
    """Live sessions through the practice server (started in-process): each single model's live
    accuracy must equal the simulation's ground truth for a seed-0 Worker answer."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a response cache of its own
    from trinity.practice.simulation import simulate_correct

    rc, out, err = cli(["eval", str(run_dir), "--mode", "live", "--json", "--bootstrap", "300"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    meta = json.loads((run_dir / "run.json").read_text())
    ids = meta["splits"]["test"]
    by_id = {q.id: q for q in practice_questions()}
    truth = [np.mean([simulate_correct(m, i, by_id[i].kind, "Worker", seed=0) for i in ids]) for m in meta["models"]]
    assert [s["accuracy"]["point"] for s in rep["singles"]] == pytest.approx(truth)
    assert all(s["avg_turns"] == 1.0 and s["cost_usd"] > 0 for s in rep["singles"])
    assert 1.0 <= rep["router"]["avg_turns"] <= 5.0
    ledger = read_jsonl(run_dir / "ledger.jsonl")
    assert ledger and {r["purpose"] for r in ledger} == {"eval"}
    paid = sum(r["cost_micro_usd"] for r in ledger) / 1e6
    total = rep["router"]["cost_usd"] + sum(s["cost_usd"] for s in rep["singles"])
    assert paid == pytest.approx(total, abs=1e-5)
    stored = json.loads((run_dir / "eval.json").read_text())["evaluations"]
    assert stored["live/test"]["per_benchmark"]["practice"]["n"] == len(ids)
    # the same evaluation again replays the call journal: nothing is paid twice
    rc, out2, err = cli(["eval", str(run_dir), "--mode", "live", "--json", "--no-write"], capsys)
    assert rc == 0, err
    assert len(read_jsonl(run_dir / "ledger.jsonl")) == len(ledger)
    assert json.loads(out2)["router"]["accuracy"] == rep["router"]["accuracy"]
    # and the score now uses the measured live accuracy
    rc, out3, err = cli(["score", str(run_dir), "--json"], capsys)
    assert rc == 0, err
    b = json.loads(out3)["benchmarks"][0]
    assert b["live"]["value"] == pytest.approx(rep["router"]["accuracy"]["point"])
    assert [s["name"] for s in b["scenarios"]] == ["measured"]


def test_live_baselines_match_the_simulation(run_dir, tmp_path, capsys):
    from trinity.practice.simulation import simulate_correct

    qfile = json.loads((run_dir / "run.json").read_text())["config"]["questions"]  # the run's questions
    rc, out, err = cli(
        [
            "baselines",
            "--pool",
            "practice",
            "--questions",
            str(qfile),
            "--run",
            str(tmp_path / "b"),
            "--json",
            "--bootstrap",
            "200",
        ],
        capsys,
    )
    assert rc == 0, err
    rep = json.loads(out)
    from trinity.data.questions import load_questions

    qs = load_questions(qfile)
    test = split_ids(qs, 0)["test"]
    kinds = {q.id: q.kind for q in qs}
    truth = [np.mean([simulate_correct(m, i, kinds[i], "Worker", seed=0) for i in test]) for m in rep["models"]]
    assert rep["mode"] == "live" and rep["n_questions"] == len(test)
    assert [s["accuracy"]["point"] for s in rep["always"]] == pytest.approx(truth)
    assert (tmp_path / "b" / "ledger.jsonl").exists()


def test_oracle_with_the_run_reports_the_router(run_dir, capsys):
    rc, out, err = cli(["oracle", "practice", "--run", str(run_dir), "--json", "--bootstrap", "300"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    _, _, _, correct = routed(run_dir, "test")
    assert rep["n_questions"] == 8
    assert rep["router"]["accuracy"] == pytest.approx(correct.mean())
    cf = rep["crossfit"]
    assert rep["router"]["headroom_captured"] == pytest.approx(
        (correct.mean() - cf["best_single"]) / (cf["oracle"] - cf["best_single"])
    )


def test_score_without_king_or_live(run_dir, capsys):
    # no audit split in the run: the gap is unknown, and said to be (no invented stand-in)
    rc, out, err = cli(["score", str(run_dir), "--json"], capsys)
    assert rc == 0, err
    (b,) = json.loads(out)["benchmarks"]
    assert b["overfit_gap"]["value"] is None and "audit accuracy unknown" in b["overfit_gap"]["source"]
    # stand-ins named by the user: val − test
    rc, out, err = cli(["score", str(run_dir), "--json", "--eval-split", "val", "--audit-split", "test"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    (b,) = rep["benchmarks"]
    _, _, _, correct = routed(run_dir, "test")
    _, _, _, val_correct = routed(run_dir, "val")
    assert b["cached"]["value"] == pytest.approx(correct.mean())
    assert b["live"]["value"] is None and "not measured" in b["live"]["source"]
    assert b["overfit_gap"]["value"] == pytest.approx(val_correct.mean() - correct.mean())
    se = np.sqrt(np.var(val_correct, ddof=1) / val_correct.size + np.var(correct, ddof=1) / correct.size)
    assert f"standard error ±{se:.3f}" in b["overfit_gap"]["source"]  # sample variances, not ddof=0
    c = correct.mean()
    mult = 0.85 if 0.08 < val_correct.mean() - c <= 0.15 else (0.0 if val_correct.mean() - c > 0.15 else 1.0)
    assert rep["composite"]["live=cached, 1 turn (optimistic)"] == pytest.approx(
        (0.70 * c + 0.15 * c + 0.10 * c + 0.05 * 0.5) * mult
    )
    assert rep["composite"]["live=0 (pessimistic)"] == pytest.approx((0.70 * c + 0.05 * 0.5) * mult)
    rc, out, _ = cli(["score", str(run_dir)], capsys)
    assert rc == 0 and "pessimistic" in out and "no king given" in out and "stopped paying" in out


def test_score_against_itself_as_king_has_no_novelty_and_no_margin(run_dir, capsys):
    rc, out, err = cli(["score", str(run_dir), "--king", str(run_dir / "best_theta.npy"), "--json"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["benchmarks"][0]["novelty"]["value"] == 0.0
    assert all(abs(m) < 0.05 * 0.5 + 1e-9 for m in rep["king"]["margin"].values())  # only novelty differs
    assert not any(rep["king"]["dethrones"].values())


def test_score_against_a_bundle_king(run_dir, tmp_path, capsys):
    from trinity.model.theta import save_bundle_weights, split_theta
    from trinity.optim.routing import load_trained

    tr = load_trained(run_dir)
    king = np.load(run_dir / "best_theta.npy").copy()
    head, _ = split_theta(king, len(tr.models), tr.router.hidden)
    head[:] = 0.0  # all logits 0: argmax ties go to index 0 → always (model 0, Thinker)
    save_bundle_weights(tmp_path / "king", king, len(tr.models), tr.router.hidden)
    rc, out, err = cli(["score", str(run_dir), "--king", str(tmp_path / "king"), "--json"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    ids, routing, p, _ = routed(run_dir, "test")
    agree = np.mean((routing.model_idx == 0) & (routing.role_idx == 0))
    assert rep["benchmarks"][0]["novelty"]["value"] == pytest.approx(1 - agree)
    assert rep["king"]["benchmarks"][0]["cached"]["value"] == pytest.approx(p[:, 0].mean())
    assert "bundle" in " ".join(rep["notes"])


def test_score_uses_a_measured_live_eval(run_dir, capsys):
    path = run_dir / "eval.json"
    doc = json.loads(path.read_text()) if path.exists() else {"run": run_dir.name, "evaluations": {}}
    doc["evaluations"]["live/test"] = {
        "samples": 2,
        "per_benchmark": {"practice": {"n": 12, "accuracy": 0.5, "avg_turns": 3.0}},
    }
    atomic_write_json(path, doc)
    try:
        rc, out, err = cli(["score", str(run_dir), "--json"], capsys)
        assert rc == 0, err
        rep = json.loads(out)
        b = rep["benchmarks"][0]
        assert b["live"]["value"] == 0.5 and "live eval.json" in b["live"]["source"]
        (s,) = b["scenarios"]
        assert s["name"] == "measured" and s["efficiency"] == pytest.approx(0.25)
        c = b["cached"]["value"]
        assert s["score"] == pytest.approx((0.70 * c + 0.15 * 0.5 + 0.10 * 0.25 + 0.05 * 0.5) * b["penalty"])
    finally:
        del doc["evaluations"]["live/test"]
        atomic_write_json(path, doc)


def test_score_errors(run_dir, tmp_path, capsys):
    bad = tmp_path / "king.npy"
    np.save(bad, np.ones(7))
    rc, _, err = cli(["score", str(run_dir), "--king", str(bad)], capsys)
    assert rc == 2 and f"king theta {bad} has 7 parameters" in err and "best_theta.npy" not in err
    rc, _, err = cli(["score", str(run_dir), "--eval-split", "test"], capsys)
    assert rc == 2 and "both 'test'" in err


@pytest.mark.parametrize(
    "doc, match",
    [
        ([1], "eval.json is not a JSON object; delete it and run trinity eval again"),
        ({"run": "x", "evaluations": {"live/test": {"router": 5}}}, "eval.json: field evaluations.live/test.per_b"),
        (
            {"run": "x", "evaluations": {"live/test": {"per_benchmark": {"practice": {"accuracy": "high", "n": 3}}}}},
            "eval.json: field evaluations.live/test.",
        ),
    ],
)
def test_score_refuses_an_eval_json_of_the_wrong_shape(run_dir, capsys, doc, match):
    # a malformed live entry must neither pass silently as "not measured" nor crash with a traceback
    atomic_write_json(run_dir / "eval.json", doc)
    rc, out, err = cli(["score", str(run_dir)], capsys)
    assert rc == 2 and out == "" and match in err and err.count("\n") == 1


def test_eval_live_on_a_cached_run_says_why_it_needs_a_pool(run_dir, capsys):
    meta = json.loads((run_dir / "run.json").read_text())
    meta["config"].pop("pool", None)  # a cached run trained on a matrix alone names no pool
    meta.pop("pool", None)
    atomic_write_json(run_dir / "run.json", meta)
    rc, out, err = cli(["eval", str(run_dir), "--mode", "live"], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "the run's config names none" in err and "--pool NAME" in err


def test_eval_notes_name_no_issue_numbers(run_dir, capsys):
    import re

    rc, out, err = cli(["eval", str(run_dir)], capsys)
    assert rc == 0 and "feature baselines" in out
    assert not re.search(r"issue \d", out + err)
