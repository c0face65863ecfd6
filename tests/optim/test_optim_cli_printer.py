"""`trinity train` / `resume` print the events they follow through the events' records
(`trinity.runs.records`), not by string keys of the line."""

from __future__ import annotations

import json

from trinity.optim.cli import _printer


def _printed(capsys, *lines: dict, as_json: bool = False) -> list[str]:
    on_event = _printer(as_json)
    for line in lines:
        on_event(line)
    return capsys.readouterr().out.splitlines()


GEN = {"type": "generation", "time": 1.0, "gen": 3, "best": 0.5, "mean": 0.25, "max": 0.5, "sigma": 0.1, "evals": 8}


def test_each_event_kind_is_one_line(capsys):
    out = _printed(
        capsys,
        {**GEN, "secs": 1.25, "val_acc": 0.75, "cost_usd": 0.0123},
        {"type": "warm_start", "time": 1.0, "gen": 0, "method": "labels", "lambda": 0.01, "train_acc": 0.6},
        {
            "type": "warm_start",
            "time": 1.0,
            "gen": 0,
            "method": "labels",
            "lambda": 1,
            "train_acc": 0.5,
            "label_targets": "group",
        },
        {"type": "warm_start", "time": 1.0, "gen": 0, "method": "roles", "role_train_acc": 0.9},
        {"type": "status", "time": 1.0, "status": "finished", "message": "done: 3 generations"},
        {"type": "status", "time": 1.0, "status": "running"},
        {"type": "log", "time": 1.0, "level": "warning", "message": "slow pool"},
        {"type": "progress", "time": 1.0, "gen": 3, "done": 1, "total": 4},
    )
    assert out == [
        "gen    3  best 0.500  mean 0.250  max 0.500  sigma 0.1000  val 0.750  $0.0123  1.25s",
        "warm start (generation 0, labels, question targets, lambda 0.01)  train 0.600",
        "warm start (generation 0, labels, group targets, lambda 1)  train 0.500",
        "warm start (generation 0, role rows: Worker, then Verifier once turns exist)  fit acc 0.900",
        "done: 3 generations",
        "warning: slow pool",
    ]


def test_a_field_the_run_did_not_record_is_a_dash_and_an_unknown_line_is_skipped(capsys):
    # a generation without sigma or secs (a run without an ES step size), an event type a newer
    # engine writes: neither is a traceback
    out = _printed(capsys, {**GEN, "sigma": None}, {"type": "from_the_future", "time": 1.0})
    assert out == ["gen    3  best 0.500  mean 0.250  max 0.500  sigma —  —s"]


def test_json_mode_prints_the_line_as_written(capsys):
    line = {**GEN, "new_field": [1]}
    assert _printed(capsys, line, as_json=True) == [json.dumps(line)]
