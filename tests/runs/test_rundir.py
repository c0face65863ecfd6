import subprocess
import sys

import pytest

from trinity.errors import RunLockedError
from trinity.runs import RunDir, list_runs


def test_meta_events_and_status(tmp_path):
    rd = RunDir(tmp_path / "r1")
    rd.path.mkdir()
    rd.write_meta({"id": "r1", "status": "created"})
    rd.set_status("running")
    rd.append_event("generation", gen=0, best=0.5)
    rd.set_status("finished", "done")
    meta = rd.read_meta()
    assert meta["status"] == "finished" and meta["status_message"] == "done"
    types = [e["type"] for e in rd.read_events()]
    assert types == ["status", "generation", "status"]
    assert [r.id for r in list_runs(tmp_path)] == ["r1"]


def test_lock_refuses_second_engine_and_dies_with_process(tmp_path):
    rd = RunDir(tmp_path / "r")
    code = ("import sys, time; from trinity.runs import RunDir; l = RunDir(sys.argv[1]).lock().acquire();"
            "print('locked', flush=True); time.sleep(60)")
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
