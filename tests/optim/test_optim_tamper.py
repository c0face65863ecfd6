"""A tampered run directory never makes a resume write outside it or die with a traceback:
every run-dir file replaced by a symbolic link to a file outside, the run directory itself a
link, run.json's `cache_path` pointing outside, and crafted checkpoint fields (the manifest's
sha256 updated to match) — each one line naming the thing, a non-zero exit, nothing written."""

import hashlib
import io
import json
import os
import shutil
import zipfile

import numpy as np
import pytest
from optim_helpers import tree_digest, trinity_inproc, write_inputs
from train_argv import train_argv

from trinity.optim import checkpoint as ckpt
from trinity.runs.rundir import RunDir


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    from trinity.cli import main

    tmp = tmp_path_factory.mktemp("tamper")
    q, m = write_inputs(tmp, n_per_cat=8)
    assert main(train_argv(tmp / "a", questions=q, matrix=m, generations=2, popsize=4, m=4)) == 0
    run = RunDir(tmp / "a")
    meta = run.read_meta()
    meta["config"]["generations"] = 3
    run.write_meta({**meta, "status": "stopped"})  # as if stopped after 2 of 3
    (tmp / "a" / "journal.jsonl").write_text("")
    return tmp / "a"


@pytest.fixture
def run(base_run, tmp_path):
    dst = tmp_path / "a"
    shutil.copytree(base_run, dst, symlinks=True)
    return dst


def _one_error_line(capsys, run, *needles, args=()):
    rc, out, err = trinity_inproc(capsys, "resume", str(run), *args)
    lines = err.strip().splitlines()
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("error: "), (rc, err[-2000:])
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_the_untampered_copy_resumes(run, capsys):
    rc, out, err = trinity_inproc(capsys, "resume", str(run))
    assert rc == 0, err[-2000:]
    assert json.loads((run / "run.json").read_text())["status"] == "finished"


@pytest.mark.parametrize(
    "name", [".lock", "traces.jsonl", "events.jsonl", "journal.jsonl", "ledger.jsonl", "checkpoint"]
)
def test_a_run_dir_entry_linked_outside_is_refused(run, tmp_path, capsys, name):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / name
    src = run / name
    if src.exists():
        shutil.move(str(src), str(target))
    else:
        target.write_text('{"x": 1}\n' * 3)
    os.symlink(target, src)
    before_out, before_run = tree_digest(outside), tree_digest(run)
    line = _one_error_line(capsys, run, "symbolic link", name)
    assert "Traceback" not in line
    assert tree_digest(outside) == before_out and tree_digest(run) == before_run  # nothing written anywhere
    assert json.loads((run / "run.json").read_text())["status"] == "stopped"


def test_a_run_dir_that_is_itself_a_link_is_refused(run, tmp_path, capsys):
    link = tmp_path / "link"
    os.symlink(run, link)
    before = tree_digest(run)
    _one_error_line(capsys, link, "symbolic link", "use the real directory")
    assert tree_digest(run) == before


def test_a_cache_path_outside_the_run_dir_is_refused_on_resume(run, tmp_path, capsys):
    meta = json.loads((run / "run.json").read_text())
    meta["config"]["cache_path"] = str(tmp_path / "elsewhere" / "responses.sqlite")
    (run / "run.json").write_text(json.dumps(meta))
    before = tree_digest(run)
    _one_error_line(capsys, run, "cache_path", "outside the run directory", "--cache")
    assert not (tmp_path / "elsewhere").exists() and tree_digest(run) == before
    meta["config"]["cache_path"] = "../elsewhere/responses.sqlite"  # relative: resolved against the run dir
    (run / "run.json").write_text(json.dumps(meta))
    _one_error_line(capsys, run, "cache_path", "outside the run directory")
    assert not (tmp_path / "elsewhere").exists()


def _state_and_forge(run):
    mpath = run / "checkpoint" / "manifest.json"
    man = json.loads(mpath.read_text())
    blob = (run / "checkpoint" / man["file"]).read_bytes()

    def forge(new_blob: bytes) -> None:
        (run / "checkpoint" / man["file"]).write_bytes(new_blob)
        man.update(sha256=hashlib.sha256(new_blob).hexdigest(), bytes=len(new_blob))
        mpath.write_text(json.dumps(man))

    return ckpt.decode_state(blob), forge


def _nan_best(st):
    st["best"]["theta"] = np.full_like(st["best"]["theta"], np.nan)


def _short_x0(st):
    st["es_x0"] = np.zeros(3)


CRAFTED = {
    "traces_bytes=-5": ("traces_bytes", lambda st: st.update(traces_bytes=-5)),
    "traces_bytes=abc": ("traces_bytes", lambda st: st.update(traces_bytes="abc")),
    "history=[1,x,null]": ("history", lambda st: st.update(history=[1, "x", None])),
    "batch_rng=x": ("batch_rng", lambda st: st.update(batch_rng="x")),
    "best theta NaN": ("best.theta", _nan_best),
    "es_x0 wrong size": ("es_x0", _short_x0),
    "gen=1e300": ("does not match its manifest", lambda st: st.update(gen=10**300)),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_a_crafted_checkpoint_field_is_one_line(run, capsys, case):
    field, mutate = CRAFTED[case]
    state, forge = _state_and_forge(run)
    mutate(state)
    forge(ckpt.encode_state(state) if case != "gen=1e300" else _raw_gen(state))
    before = tree_digest(run)
    _one_error_line(capsys, run, "checkpoint", field)
    assert tree_digest(run) == before  # history.json and best_theta.npy untouched
    assert json.loads((run / "run.json").read_text())["status"] == "stopped"  # not marked failed


def _raw_gen(state):
    # encode_state cannot carry 10**300 through np.int64; write the JSON by hand
    gen = state.pop("gen")
    blob = ckpt.encode_state({**state, "gen": 0})
    zin = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "state_json.npy":
                doc = json.loads(np.load(io.BytesIO(data)).tobytes())
                doc["gen"] = gen
                b = io.BytesIO()
                np.save(b, np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8))
                data = b.getvalue()
            zout.writestr(info.filename, data)
    return out.getvalue()


def test_an_npy_header_claiming_a_huge_shape_is_one_line(run, capsys):
    state, forge = _state_and_forge(run)
    blob = ckpt.encode_state(state)
    zin = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "a0.npy":
                hdr = io.BytesIO()
                np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
                data = hdr.getvalue() + b"\0" * 64
            zout.writestr(info.filename, data)
    forge(out.getvalue())
    before = tree_digest(run)
    _one_error_line(capsys, run, "checkpoint", "claims shape")
    assert tree_digest(run) == before


@pytest.mark.parametrize("name", ["events.jsonl", "ledger.jsonl"])
def test_an_append_refuses_a_link_made_after_the_lock(run, tmp_path, name):
    """The lock's check runs once; every append also opens with O_NOFOLLOW."""
    from trinity.errors import InputError
    from trinity.io import append_jsonl
    from trinity.pool.appender import GroupCommitAppender

    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    (run / name).unlink(missing_ok=True)
    os.symlink(outside, run / name)
    with pytest.raises(InputError, match="symbolic link"):
        if name == "events.jsonl":
            append_jsonl(run / name, {"type": "log"})
        else:
            GroupCommitAppender(run / name, what="ledger")
    assert outside.read_text() == ""
