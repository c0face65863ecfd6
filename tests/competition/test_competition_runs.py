"""A run trains on its competition's router text, records it in run.json, and everything that
re-encodes questions afterwards (resume, eval, routing) takes it from there."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from train_argv import train_argv

from trinity.competition.text import MINIROUTER, TINYROUTER, router_text
from trinity.config import TrainConfig, load_config
from trinity.errors import ConfigError


def _train(capsys, run: Path, *extra: str) -> tuple[int, str]:
    from trinity.cli import main

    capsys.readouterr()
    rc = main(
        train_argv(run, *extra, questions="practice", matrix="practice", mode=None, generations=2, popsize=4, m=4)
    )
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_competition_recorded_and_used_by_resume_and_routing(tmp_path, capsys):
    run = tmp_path / "mr"
    rc, out = _train(capsys, run, "--competition", "minirouter")
    assert rc == 0, out
    assert "router text: minirouter" in out
    meta = json.loads((run / "run.json").read_text())
    assert meta["competition"] == MINIROUTER and meta["config"]["competition"] == MINIROUTER

    from trinity.benchmarks.practice import practice_questions
    from trinity.optim.routing import load_trained

    tr = load_trained(run)
    assert tr.competition == MINIROUTER
    q = practice_questions()[0]
    assert tr.texts([q]) == [router_text(MINIROUTER).question_input(q)]
    assert not tr.texts([q])[0].endswith("<Head Input>")

    from trinity.cli import main

    rc = main(["resume", str(run), "--generations", "3"])  # the recorded config hash still matches
    assert rc == 0
    assert json.loads((run / "run.json").read_text())["competition"] == MINIROUTER

    # default: from the pool (a practice matrix has none -> tinyrouter)
    rc, out = _train(capsys, tmp_path / "tr", "--generations", "1")
    assert rc == 0, out
    assert json.loads((tmp_path / "tr" / "run.json").read_text())["competition"] == TINYROUTER


def test_old_run_without_competition_defaults_by_pool_and_keeps_its_hash(tmp_path):
    cfg = load_config(None, {"questions": "practice", "matrix": "practice"})
    legacy = cfg.model_dump(mode="json")
    legacy.pop("competition")  # a run.json written before the key existed
    assert TrainConfig.model_validate(legacy).hash() == cfg.hash()
    assert cfg.model_copy(update={"competition": "minirouter"}).hash() != cfg.hash()

    from trinity.competition.text import run_competition

    assert run_competition({"config": {**legacy, "pool": "chutes"}}) == MINIROUTER
    assert run_competition({"config": legacy}) == TINYROUTER


def test_unknown_competition_flag_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _train(capsys, tmp_path / "x", "--competition", "kaggle")
    with pytest.raises(ConfigError, match="competition"):
        load_config(None, {"competition": "kaggle"})


def test_theta_length_refused_or_warned_at_train():
    from trinity.optim.engine import _theta_check

    four = types.SimpleNamespace(n_params=14_336, hidden=1024)
    with pytest.raises(ConfigError, match=r"--competition tinyrouter: .*13,312.*14,336"):
        _theta_check(TINYROUTER, 4, four, explicit=True)
    note = _theta_check(TINYROUTER, 4, four, explicit=False)
    assert "14,336" in note and "would be refused" in note
    assert _theta_check(MINIROUTER, 4, four, explicit=True) is None
    five = types.SimpleNamespace(n_params=15_360, hidden=1024)
    with pytest.raises(ConfigError, match="15,360"):
        _theta_check(MINIROUTER, 5, five, explicit=True)
    assert _theta_check(TINYROUTER, 3, types.SimpleNamespace(n_params=13_312, hidden=1024), True) is None


def test_minirouter_eval_items_and_training_notes():
    from trinity.competition.evalset import (
        MINIROUTER_PROMOTION_SCORE,
        minirouter_eval_ids,
    )
    from trinity.optim.engine import _eval_set_notes

    ids = minirouter_eval_ids()
    # their load_tasks: the 500 test rows in order, random.Random(0).shuffle, the first 20
    assert len(ids) == 20 == len(set(ids)) and ids[:3] == ["math500-419", "math500-459", "math500-130"]
    assert MINIROUTER_PROMOTION_SCORE == 0.8
    notes = _eval_set_notes(MINIROUTER, {"train": [*ids[:7], "math500-0"], "val": ids[7:9], "test": ids[9:]})
    assert notes[0] == (
        "info",
        (
            "MiniRouter's validator scores 20 MATH-500 items (test, shuffled with seed 0, "
            "first 20); in this run: 7 in train, 2 in val, 11 in test"
        ),
    )
    assert notes[1][0] == "warning" and notes[1][1].startswith("7 of the items MiniRouter scores are in the training")
    assert _eval_set_notes(MINIROUTER, {"train": ["math500-0"], "val": [], "test": []}) == []
    assert _eval_set_notes(TINYROUTER, {"train": ids, "val": [], "test": []}) == []
