"""`trinity score` on a live run: without an outcome matrix it says how to get the cached part;
with one collected under the competition's protocol (`--matrix`) it scores; and a run trained
under another protocol than the competition's is warned about."""

from __future__ import annotations

import json

import numpy as np
import pytest
from train_argv import train_argv

from trinity.practice.server import start_practice_server


@pytest.mark.slow
def test_score_of_a_live_run(tmp_path, capsys, monkeypatch):
    from trinity.analysis.score import score_estimate
    from trinity.cli import main
    from trinity.data.matrix import load_matrix
    from trinity.optim.routing import load_trained
    from trinity.optim.runinputs import load_run_inputs
    from trinity.runs.rundir import RunDir

    h = start_practice_server(port=0)
    monkeypatch.setenv("TRINITY_POOL_BASE_URL", h.base_url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run, m = tmp_path / "run", tmp_path / "m" / "M.json"
    try:
        args = train_argv(
            run, "--pool", "practice", "--warm-start", "none", "--competition", "tinyrouter",
            mode="live", questions="practice", generations=1, popsize=4, m=3,
        )  # fmt: skip
        assert main(args) == 0
        capsys.readouterr()
        assert main(["score", str(run)]) != 0
        err = capsys.readouterr().err
        assert "no outcome matrix" in err and "--matrix M.json" in err and "--protocol tinyrouter" in err
        assert "Traceback" not in err
        collect = ["collect", "--benchmark", "practice", "--pool", "practice", "--protocol", "tinyrouter"]
        assert main([*collect, "--k", "1", "--split", "all", "--out", str(m)]) == 0
    finally:
        h.stop()
    rep = score_estimate(run, matrix=m)
    assert not any("warning" in n for n in rep.notes)  # trained under TinyRouter's protocol
    # by hand: the turn-1 model's cached answer on the test split, 0.70 × it + 0.05 × 0.5 with live = 0
    inputs, mat = load_run_inputs(RunDir(run)), load_matrix(m)
    test = [q for q in inputs.questions if q.id in set(inputs.splits["test"])]
    routed = load_trained(run).route(test).model_idx
    cached = float(np.mean([mat.accuracy()[mat.row(q.id), int(i)] for q, i in zip(test, routed)]))
    b = rep.benchmarks[0]
    assert b.inputs.cached.value == pytest.approx(cached)
    pess = next(s for s in b.scenarios if s.name.startswith("live=0"))
    assert pess.score == pytest.approx(0.70 * cached + 0.05 * 0.5)
    # a run made before runs recorded their protocol reads as open: warned about
    meta = json.loads((run / "run.json").read_text())
    meta.pop("protocol")
    meta["config"].pop("protocol")
    (run / "run.json").write_text(json.dumps(meta))
    rep = score_estimate(run, matrix=m)
    assert rep.notes[0].startswith("warning: this run was trained under the open session protocol")
