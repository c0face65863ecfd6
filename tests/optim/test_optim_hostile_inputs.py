"""Issue 12's smaller items: non-UTF-8 / directory inputs are one-line errors, a run that failed at
start does not block a retry, and an append never glues onto a torn last line."""

import json

from optim_helpers import trinity_main, write_inputs
from train_argv import train_argv

from trinity.io import append_jsonl, read_jsonl
from trinity.runs.rundir import RunDir


def _one_error_line(res, *needles):
    rc, out, err = res
    assert rc != 0, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], lines[0]


def _train(*args):
    """`trinity train` in this process (`trinity_main`: the console script's path, no child start-up)."""
    return trinity_main(train_argv(None, *args, generations=1, popsize=2, m=2))


def test_non_utf8_and_directory_inputs_are_one_line_errors(tmp_path):
    q, m = write_inputs(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(q.read_bytes().splitlines(keepends=True)[0] + b"\xff\xfe garbage\n")
    _one_error_line(_train("--questions", bad, "--matrix", m, "--run-dir", tmp_path / "r1"), "line 2", "UTF-8")
    cfg = tmp_path / "bin.yaml"
    cfg.write_bytes(b"\x00\x01\xff\xfe binary")
    _one_error_line(_train("--config", cfg, "--run-dir", tmp_path / "r2"), "not UTF-8", str(cfg))
    d = tmp_path / "adir"
    d.mkdir()
    _one_error_line(_train("--questions", d, "--matrix", m, "--run-dir", tmp_path / "r3"), "is a directory")
    _one_error_line(_train("--questions", q, "--matrix", d, "--run-dir", tmp_path / "r4"), "is a directory")
    assert not any((tmp_path / f"r{i}").exists() for i in range(1, 5))


def test_a_run_that_failed_at_start_does_not_block_a_retry(tmp_path, torch_one_thread):
    """The retry trains in this process, on one torch thread (as the child process it replaced,
    under OMP_NUM_THREADS=1): two threads spinning on a busy 2-core box doubled its time."""
    q, m = write_inputs(tmp_path, n_per_cat=6)  # the retry trains for real: few questions to encode
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_meta({"id": "run", "status": "created", "config": {}})  # as a start that died left it
    run.append_event("status", status="created", message="")
    (run.path / "ledger.jsonl").write_bytes(b"")
    rc, _, err = _train("--questions", q, "--matrix", m, "--run-dir", run.path)
    assert rc == 0, err
    assert run.read_meta()["status"] == "finished"
    # a run that did start is never replaced
    _one_error_line(_train("--questions", q, "--matrix", m, "--run-dir", run.path), "already holds a run")


def test_an_append_after_a_torn_last_line_starts_a_new_line(tmp_path):
    p = tmp_path / "events.jsonl"
    append_jsonl(p, {"type": "a"})
    with open(p, "ab") as f:
        f.write(b'{"type": "gener')  # a kill -9 mid-append
    append_jsonl(p, {"type": "status", "status": "running"})
    assert read_jsonl(p) == [{"type": "a"}, {"type": "status", "status": "running"}]
    assert json.loads(p.read_bytes().splitlines()[-1]) == {"type": "status", "status": "running"}


def test_live_pool_settings_come_from_flags_and_leave_the_config_hash_alone():
    import argparse

    from trinity.config import TrainConfig, load_config
    from trinity.optim.cli import TRAIN_FLAGS, _overrides, register

    p = argparse.ArgumentParser()
    register(p.add_subparsers())
    a = p.parse_args(
        ["train", "--price-in", "0.5", "--price-out", "1.5", "--read-timeout", "30", "--fail-threshold", "0.8"]
    )
    cfg = load_config(None, _overrides(a, TRAIN_FLAGS))
    assert (cfg.price_in, cfg.price_out, cfg.read_timeout_s, cfg.fail_threshold) == (0.5, 1.5, 30.0, 0.8)
    assert cfg.hash() == load_config(None, {}).hash()  # changeable on resume (RESUMABLE_KEYS)
    assert TrainConfig(prices={"m": {"price_in": 1, "price_out": 2}}).prices == {"m": {"price_in": 1, "price_out": 2}}


def test_a_live_run_without_its_key_fails_before_the_run_dir_exists(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))  # no secrets.env there
    run = tmp_path / "run"
    argv = train_argv(run, "--pool", "openrouter", mode="live", questions="practice", generations=1, popsize=2, m=2)
    res = trinity_main(argv)
    _one_error_line(res, "no API key", "OPENROUTER_API_KEY")
    assert not run.exists()  # nothing left that would block the retry


def test_resume_of_a_run_with_an_empty_train_split_is_one_line(tmp_path, capsys):
    """A run directory whose splits hold no training question (here one the app's synthetic
    writer made) is refused with one line, not a JSON traceback from an empty minibatch."""
    from minertui.synth import make_run
    from trinity.cli import main

    run = make_run(tmp_path / "run-a", generations=3, planned=5, status="stopped")
    assert main(["resume", str(run.path)]) == 2
    err = capsys.readouterr().err
    assert "train split is empty" in err and "Traceback" not in err
