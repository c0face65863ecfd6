"""`generations: 0`: the warm start alone (the run finishes with its θ, checkpointed), and a
resume to N generations equals an uninterrupted N-generation run bit for bit."""

import hashlib
import json

from optim_helpers import history_sans_secs, trinity_inproc, write_inputs
from train_argv import train_argv


def _sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _traces(run):
    return [{k: v for k, v in json.loads(line).items() if k != "time"} for line in (run / "traces.jsonl").open()]


def test_zero_generations_then_resume_matches_the_uninterrupted_run(tmp_path, capsys, one_thread):
    q, m = write_inputs(tmp_path, n_per_cat=8)
    ref, zero = tmp_path / "ref", tmp_path / "zero"
    rc, _, err = trinity_inproc(capsys, *train_argv(ref, questions=q, matrix=m, generations=3, popsize=4, m=4, seed=3))
    assert rc == 0, err
    rc, out, err = trinity_inproc(
        capsys, *train_argv(zero, questions=q, matrix=m, generations=0, popsize=4, m=4, seed=3)
    )
    assert rc == 0, err
    assert "finished 0 generations" in out
    meta = json.loads((zero / "run.json").read_text())
    assert meta["status"] == "finished" and meta["warm_start"]["method"] == "labels"
    assert json.loads((zero / "history.json").read_text()) == []
    assert (zero / "best_theta.npy").exists() and (zero / "checkpoint").is_dir()
    assert json.loads((zero / "summary.json").read_text())["best_theta"]["which"] == "warm_start"
    rc, _, err = trinity_inproc(capsys, "resume", str(zero), "--generations", "3")
    assert rc == 0, err
    assert _sha(zero / "best_theta.npy") == _sha(ref / "best_theta.npy")
    assert history_sans_secs(zero / "history.json") == history_sans_secs(ref / "history.json")
    assert _traces(zero) == _traces(ref)
    ws_ref = json.loads((ref / "run.json").read_text())["warm_start"]
    ws_zero = json.loads((zero / "run.json").read_text())["warm_start"]
    assert {k: v for k, v in ws_ref.items() if k != "secs"} == {k: v for k, v in ws_zero.items() if k != "secs"}
