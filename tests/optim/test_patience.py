"""`--patience N`: a run stops once its chosen θ has stood unbeaten for N generations, says so in
its status and summary, and a resume of it spends nothing; a larger patience continues it, and
the generations it ran equal an uninterrupted run's."""

import json

from optim_helpers import history_sans_secs, trinity_inproc, write_inputs
from train_argv import train_argv


def _summary(run):
    return json.loads((run / "summary.json").read_text())


def test_patience_stops_a_run_whose_choice_stands_and_a_resume_spends_nothing(tmp_path, capsys, one_thread):
    q, m = write_inputs(tmp_path, n_per_cat=8)
    ref, early = tmp_path / "ref", tmp_path / "early"
    common = dict(questions=q, matrix=m, generations=12, popsize=4, m=4, seed=3)
    rc, _, err = trinity_inproc(capsys, *train_argv(ref, **common))
    assert rc == 0, err
    rc, out, err = trinity_inproc(capsys, *train_argv(early, "--patience", "2", **common))
    assert rc == 0, err
    s = _summary(early)
    assert s.get("stopped_early") is not None, s  # on this seed the warm start (generation 0) stays the choice
    se = s["stopped_early"]
    assert se["patience"] == 2 and se["at_gen"] - se["best_gen"] == 2 and se["at_gen"] < 12
    assert s["generations"] == se["at_gen"] and s["generations_planned"] == 12
    assert f"finished {se['at_gen']} generations of 12: the chosen θ (generation {se['best_gen']})" in out
    meta = json.loads((early / "run.json").read_text())
    assert meta["status"] == "finished" and "stood unbeaten for 2 generations" in meta["status_message"]
    ran = history_sans_secs(early / "history.json")
    assert ran == history_sans_secs(ref / "history.json")[: len(ran)]  # the same generations, stopped sooner
    before = (early / "history.json").read_bytes()
    rc, out, err = trinity_inproc(capsys, "resume", str(early))
    assert rc == 0, err
    assert (early / "history.json").read_bytes() == before  # nothing more ran
    rc, out, err = trinity_inproc(capsys, "resume", str(early), "--patience", "100")
    assert rc == 0, err
    assert history_sans_secs(early / "history.json") == history_sans_secs(ref / "history.json")
    assert "stopped_early" not in _summary(early)


def test_patience_must_be_positive(tmp_path, capsys):
    q, m = write_inputs(tmp_path, n_per_cat=2)
    rc, _, err = trinity_inproc(
        capsys, *train_argv(tmp_path / "r", "--patience", "0", questions=q, matrix=m, generations=2, popsize=4, m=2)
    )
    assert rc != 0 and "patience" in err and "Traceback" not in err
