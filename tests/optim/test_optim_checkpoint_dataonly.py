"""Checkpoints are data only (issue 12 item 5): a crafted pickle is refused without running it, a
crafted npz with an object array is refused, and the state round-trips exactly."""

import hashlib
import json
import pickle

import numpy as np
import pytest
from optim_helpers import standin_trainer, tree_digest, trinity_main, write_inputs

from trinity.config import TrainConfig
from trinity.errors import CheckpointError
from trinity.optim import checkpoint as ckpt
from trinity.runs.rundir import RunDir


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):  # what an attacker would put in a run directory
        return (open, (self.marker, "w"))


@pytest.fixture()
def run_a(tmp_path):
    q, m = write_inputs(tmp_path)
    cfg = TrainConfig(questions=str(q), matrix=str(m), popsize=4, generations=3, m=4, seed=0)
    standin_trainer(tmp_path / "a", cfg.model_copy(update={"generations": 2}), run_id="a").train()
    RunDir(tmp_path / "a").update_meta(config=cfg.resolved())  # as if killed after 2 of 3
    return tmp_path / "a", cfg


def _one_error_line(res, *needles):
    rc, out, err = res
    assert rc != 0, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], lines[0]


def _forge(run, blob, name, fmt):
    mpath = run / "checkpoint" / "manifest.json"
    man = json.loads(mpath.read_text())
    (run / "checkpoint" / name).write_bytes(blob)
    man.update(format=fmt, file=name, sha256=hashlib.sha256(blob).hexdigest(), bytes=len(blob))
    mpath.write_text(json.dumps(man))


def test_crafted_pickle_checkpoint_never_runs(run_a, tmp_path):
    run, _ = run_a
    marker = tmp_path / "PWNED"
    blob = pickle.dumps({"gen": 2, "x": _Payload(str(marker))})
    for fmt in (ckpt.OLD_PICKLE_FORMAT, ckpt.FORMAT):  # old-format manifest, and a pickle posing as npz
        _forge(run, blob, "state-000002.pkl" if fmt == ckpt.OLD_PICKLE_FORMAT else "state-000002.npz", fmt)
        before = tree_digest(run)
        # in this process: an unpickled payload would create the marker here just as in a child
        _one_error_line(trinity_main(["resume", run]), "checkpoint")
        assert not marker.exists()
        assert tree_digest(run) == before


def test_npz_with_an_object_array_is_refused(run_a, tmp_path):
    import io

    run, cfg = run_a
    marker = tmp_path / "PWNED"
    buf = io.BytesIO()
    np.savez(
        buf, state_json=np.frombuffer(b'{"gen": 2}', dtype=np.uint8), a0=np.array([_Payload(str(marker))], dtype=object)
    )
    _forge(run, buf.getvalue(), "state-000002.npz", ckpt.FORMAT)
    # the state refers to the object array: loading it must refuse, not unpickle
    blob = buf.getvalue()
    with pytest.raises(ValueError):
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            z["a0"]
    with pytest.raises(CheckpointError, match="not a data-only"):
        ckpt.read_checkpoint(RunDir(run), run_id="a", config_hash=cfg.hash())
    assert not marker.exists()


def test_state_round_trips_exactly():
    rng = np.random.RandomState(5)
    rng.randn(7)
    state = {
        "gen": 3,
        "x": np.arange(6.0).reshape(2, 3),
        "rng": rng,
        "t": (1, "a"),
        "h": [{"best": -np.inf}],
        "n": None,
        "f": 0.1,
    }
    back = ckpt.decode_state(ckpt.encode_state(state))
    assert back["gen"] == 3 and back["t"] == (1, "a") and back["h"] == [{"best": -np.inf}] and back["f"] == 0.1
    np.testing.assert_array_equal(back["x"], state["x"])
    assert back["rng"].randn() == rng.randn()
    with pytest.raises(TypeError):
        ckpt.encode_state({"gen": 1, "obj": object()})
