"""The smallest population the config accepts (2) trains past generation 2 and resumes."""

from __future__ import annotations

import json

import pytest
from train_argv import train_argv

from trinity.io import read_jsonl


@pytest.mark.slow
def test_popsize_2_trains_and_resumes(tmp_path, capsys):
    from trinity.cli import main

    run = tmp_path / "p2"
    rc = main(train_argv(run, questions="practice", matrix="practice", mode=None, generations=2, popsize=2, m=4))
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    assert main(["resume", str(run), "--generations", "3"]) == 0
    gens = [e["gen"] for e in read_jsonl(run / "events.jsonl") if e["type"] == "generation"]
    assert gens[-1] == 3 and len(set(gens)) == 3
    assert json.loads((run / "run.json").read_text())["config"]["popsize"] == 2
