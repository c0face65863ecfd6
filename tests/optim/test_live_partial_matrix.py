"""A live run's outcome matrix may cover only the questions training reads (train + val): the test
split is evaluated live, so its rows would be bought and never read; and of those, only some train
questions of each group (`trinity collect --per-group N`: the warm start and validation give the
others their group's mean). A cached run still needs every row (it replays the matrix), and a live
run at least one train row per group."""

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


def test_live_run_takes_one_train_row_per_group_and_names_a_missing_group(tmp_path):
    from trinity.data.questions import question_group

    q, m = write_inputs(tmp_path, n_per_cat=6)
    full = inputs_from_config(_cfg(q, m, "live"))
    by_id = {x.id: x for x in full.questions}
    train = [by_id[i] for i in full.splits["train"]]
    groups = sorted({question_group(x) for x in train})
    one_each = {next(x.id for x in train if question_group(x) == g) for g in groups}
    _keep_rows(m, one_each)  # one train row per group, no val row
    part = inputs_from_config(_cfg(q, m, "live"))
    assert part.splits == full.splits and set(part.matrix.ids) == one_each
    with pytest.raises(InputError, match="have no row in the matrix"):  # the replay needs every row
        inputs_from_config(_cfg(q, m, "cached"))
    gone = groups[1]
    _keep_rows(m, {i for i in one_each if question_group(by_id[i]) != gone})
    with pytest.raises(InputError, match=f"no train row for group\\(s\\) {gone};") as e:
        inputs_from_config(_cfg(q, m, "live"))
    assert "\n" not in str(e.value) and "--per-group" in str(e.value)
