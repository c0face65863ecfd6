"""A live run's outcome matrix may cover only the questions training reads (train + val): the test
split is evaluated live, so its rows would be bought and never read. A cached run still needs every
row, and a live run still needs every train and val row."""

import pytest
from optim_helpers import write_inputs

from trinity.config import load_config
from trinity.data.matrix import load_matrix, save_matrix
from trinity.errors import InputError
from trinity.optim.runinputs import inputs_from_config


def _cfg(q, m, mode):
    return load_config(None, {"mode": mode, "questions": str(q), "matrix": str(m), "encoder": "tiny-qwen3"})


def _keep_rows(m, ids):
    mat = load_matrix(str(m))
    save_matrix(m, mat.subset([i for i in mat.ids if i in ids]))


def test_live_run_takes_a_matrix_without_the_test_rows(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=6)
    full = inputs_from_config(_cfg(q, m, "live"))
    read = set(full.splits["train"]) | set(full.splits["val"])
    assert full.splits["test"] and not read & set(full.splits["test"])
    _keep_rows(m, read)
    part = inputs_from_config(_cfg(q, m, "live"))
    assert part.splits == full.splits  # the same splits: they come from the questions, not the matrix
    assert part.matrix is not None and set(part.matrix.ids) == read
    with pytest.raises(InputError, match="have no row in the matrix"):
        inputs_from_config(_cfg(q, m, "cached"))  # cached training reads the test rows


def test_live_run_still_needs_every_train_row(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=6)
    full = inputs_from_config(_cfg(q, m, "live"))
    gone = full.splits["train"][0]
    _keep_rows(m, set(full.splits["train"][1:]) | set(full.splits["val"]))
    with pytest.raises(InputError, match=f"have no row in the matrix.*{gone}"):
        inputs_from_config(_cfg(q, m, "live"))
