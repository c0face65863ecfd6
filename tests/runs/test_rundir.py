import subprocess
import sys

import pytest

from trinity.errors import InputError, RunLockedError
from trinity.runs import RunDir, list_runs, new_run_id


def test_meta_events_and_status(tmp_path):
    rd = RunDir(tmp_path / "r1")
    rd.path.mkdir()
    rd.write_meta({"id": "r1", "status": "created"})
    rd.set_status("running")
    rd.append_event("generation", gen=0, best=0.5, mean=0.5, max=0.5, evals=4)
    rd.set_status("finished", "done")
    meta = rd.read_meta()
    assert meta["status"] == "finished" and meta["status_message"] == "done"
    types = [e["type"] for e in rd.read_events()]
    assert types == ["status", "generation", "status"]
    assert [r.id for r in list_runs(tmp_path)] == ["r1"]


def test_lock_refuses_second_engine_and_dies_with_process(tmp_path):
    rd = RunDir(tmp_path / "r")
    code = (
        "import sys, time; from trinity.runs import RunDir; l = RunDir(sys.argv[1]).lock().acquire();"
        "print('locked', flush=True); time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", code, str(rd.path)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        assert rd.is_locked()
        with pytest.raises(RunLockedError, match="in use"):
            rd.lock().acquire()
    finally:
        p.kill()
        p.wait()
    assert not rd.is_locked()  # a SIGKILLed engine leaves no stale lock
    with rd.lock():
        assert rd.is_locked()  # flock is per open file description, so we see our own lock
    assert not rd.is_locked()


def test_read_meta_names_what_is_wrong(tmp_path):
    rd = RunDir(tmp_path / "nope")
    with pytest.raises(InputError, match="not a run directory"):
        rd.read_meta()
    assert not rd.exists()
    rd.path.mkdir()
    rd.run_json.write_text("[1, 2]")
    with pytest.raises(InputError, match="not a JSON object"):
        rd.read_meta()
    rd.run_json.write_bytes(b'{"id": "r", "status": "run')  # torn by a crash mid-write elsewhere
    with pytest.raises(InputError, match="run.json"):
        rd.read_meta()
    rd.run_json.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(InputError, match="run.json"):
        rd.read_meta()


def test_update_meta_merges_and_leaves_no_temp_files(tmp_path):
    rd = RunDir(tmp_path / "r")
    rd.path.mkdir()
    rd.write_meta({"id": "r", "status": "created", "splits": {"train": ["a"]}})
    meta = rd.update_meta(status="running", models=["m0", "m1"])
    assert meta == rd.read_meta()
    assert meta["splits"] == {"train": ["a"]} and meta["models"] == ["m0", "m1"] and meta["status"] == "running"
    assert meta["updated"].endswith("+00:00")  # ISO-8601 UTC
    assert sorted(p.name for p in rd.path.iterdir()) == ["run.json"]


def test_events_tolerate_a_torn_last_line(tmp_path):
    rd = RunDir(tmp_path / "r")
    assert rd.read_events() == []  # no folder, no events file yet
    rd.path.mkdir()
    rd.append_event("generation", gen=0, best=0.25, mean=0.25, max=0.25, evals=4)
    rd.log("hello", level="warning")
    with open(rd.events, "ab") as f:
        f.write(b'{"type": "generation", "gen": 1, "be')  # the engine mid-append
    evs = rd.read_events()
    assert [(e["type"], e.get("gen"), e.get("message")) for e in evs] == [
        ("generation", 0, None),
        ("log", None, "hello"),
    ]
    assert all(isinstance(e["time"], float) for e in evs) and evs[1]["level"] == "warning"


def test_list_runs_newest_first_and_only_run_directories(tmp_path):
    import os

    assert list_runs(tmp_path / "missing") == []
    for i, name in enumerate(["old", "new", "mid"]):
        rd = RunDir(tmp_path / name)
        rd.path.mkdir()
        rd.write_meta({"id": name})
        os.utime(rd.run_json, (1_700_000_000 + i, 1_700_000_000 + {"old": 0, "new": 20, "mid": 10}[name]))
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "stray.txt").write_text("x")
    assert [r.id for r in list_runs(tmp_path)] == ["new", "mid", "old"]


def test_new_run_ids_are_unique_and_carry_the_prefix():
    ids = {new_run_id("demo-live") for _ in range(200)}
    assert len(ids) == 200 and all(i.startswith("demo-live-20") for i in ids)


def test_lock_records_the_pid_and_can_be_taken_again_after_release(tmp_path):
    import os

    rd = RunDir(tmp_path / "r")
    assert not rd.is_locked()  # no lock file at all
    lock = rd.lock().acquire()
    assert (rd.path / ".lock").read_text().strip() == str(os.getpid())
    lock.release()
    lock.release()  # a second release is harmless
    assert not rd.is_locked()
    with rd.lock():
        pass
    assert not rd.is_locked()


def test_an_event_that_does_not_fit_its_record_is_refused_before_it_is_written(tmp_path):
    from trinity.runs.records import RecordError

    rd = RunDir(tmp_path / "r")
    rd.path.mkdir()
    with pytest.raises(RecordError, match="generation event: field mean is missing"):
        rd.append_event("generation", gen=1, best=0.5)
    with pytest.raises(RecordError, match="field total is missing"):
        rd.append_event("progress", gen=1, done=2)
    assert rd.read_events() == []  # nothing half-typed reached the file
