"""The audit split and the competition's overfit-gap factors (issue 14)."""

import json

import pytest
from optim_helpers import trinity_inproc, write_inputs
from train_argv import train_argv

from trinity.config import TrainConfig
from trinity.optim.audit import gap_factor, overfit_report
from trinity.optim.runinputs import inputs_from_config


@pytest.mark.parametrize(
    "gap,factor",
    [(None, 1.0), (-0.3, 1.0), (0.0, 1.0), (0.08, 1.0), (0.0800001, 0.85), (0.15, 0.85), (0.1500001, 0.0), (0.5, 0.0)],
)
def test_gap_factor_matches_the_competition_rule_at_the_boundaries(gap, factor):
    # TinyRouter: gap > 0.15 rejects, gap > 0.08 multiplies by 0.85 (strict inequalities)
    assert gap_factor(gap)[0] == factor


def test_overfit_report_per_benchmark():
    rep = overfit_report({"val": {"all": 0.8, "a": 0.9}, "test": {"all": 0.7}, "audit": {"all": 0.6, "a": 0.85}})
    assert rep["gaps"]["all"]["val_minus_audit"]["factor"] == 0.0  # 0.2 > 0.15
    assert rep["gaps"]["all"]["test_minus_audit"]["factor"] == 0.85  # 0.1
    assert rep["gaps"]["a"]["val_minus_audit"]["factor"] == 1.0  # 0.05


def test_audit_split_is_carved_from_test_and_reported(tmp_path, capsys):
    q, m = write_inputs(tmp_path, n_per_cat=30)
    cfg = TrainConfig(questions=str(q), matrix=str(m), splits={"train": 0.6, "val": 0.2, "test": 0.1, "audit": 0.1})
    sp = inputs_from_config(cfg).splits
    assert len(sp["audit"]) == 9 and len(sp["test"]) == 9
    assert not set(sp["audit"]) & (set(sp["train"]) | set(sp["val"]) | set(sp["test"]))
    # no audit: the splits (and the config hash) are the ones a run made before audit existed had
    plain = TrainConfig(questions=str(q), matrix=str(m))
    assert "audit" not in inputs_from_config(plain).splits
    assert (
        plain.hash()
        == TrainConfig(
            questions=str(q), matrix=str(m), splits={"train": 0.6, "val": 0.2, "test": 0.2, "audit": 0.0}
        ).hash()
    )
    cf = tmp_path / "c.yaml"
    cf.write_text("splits: {train: 0.6, val: 0.2, test: 0.1, audit: 0.1}\n")
    argv = train_argv(tmp_path / "run", config=cf, mode=None, questions=q, matrix=m, generations=1, popsize=4, m=None)
    rc, _, err = trinity_inproc(capsys, *argv)
    assert rc == 0, err
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    gap = s["overfit"]["gaps"]["all"]["val_minus_audit"]
    assert gap["gap"] == pytest.approx(s["val_acc"] - s["audit_acc"]) and gap["factor"] == gap_factor(gap["gap"])[0]
    assert s["audit_n"] == 9


def test_seeds_write_one_run_dir_per_seed_and_a_summary(tmp_path, capsys):
    q, m = write_inputs(tmp_path, n_per_cat=12)
    argv = train_argv(
        tmp_path / "r", "--seeds", "0,1,2", mode=None, questions=q, matrix=m, generations=1, popsize=4, m=None
    )
    rc, out, err = trinity_inproc(capsys, *argv)
    assert rc == 0, err
    dirs = [tmp_path / f"r-s{s}" for s in (0, 1, 2)]
    assert all((d / "summary.json").exists() for d in dirs) and not (tmp_path / "r").exists()
    metas = [json.loads((d / "run.json").read_text()) for d in dirs]
    assert [mm["config"]["seed"] for mm in metas] == [0, 1, 2]
    assert metas[0]["splits"] == metas[1]["splits"] == metas[2]["splits"]  # one shared split
    summ = json.loads((tmp_path / "r-seeds.json").read_text())
    vals = [r["val_acc"] for r in summ["runs"]]
    assert summ["best"]["val_acc"] == max(vals) and summ["spread"]["val_acc"]["n"] == 3
    assert summ["spread"]["val_acc"]["min"] == min(vals) and "best seed" in out
    rc, _, err = trinity_inproc(
        capsys,
        "train",
        "--questions",
        str(q),
        "--matrix",
        str(m),
        "--encoder",
        "tiny-qwen3",
        "--seeds",
        "0,x",
        "--run-dir",
        str(tmp_path / "r2"),
    )
    assert rc != 0 and "--seeds" in err
