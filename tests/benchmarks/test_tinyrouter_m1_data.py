"""The tinyrouter_m1 data: the fixtures in the dataset's exact schema, bad rows, no Hub."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trinity.benchmarks.tinyrouter_m1 import load_m1
from trinity.competition import m1
from trinity.errors import InputError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "tinyrouter_m1"


@pytest.mark.parametrize("config", ["5-domain", "20-domain"])
@pytest.mark.parametrize("split", ["train", "test"])
def test_fixtures_have_the_schema_and_every_domain(config, split):
    path = FIX / config / f"{split}.jsonl"
    assert path.stat().st_size < 60_000
    for line in path.read_text().splitlines():
        assert list(json.loads(line)) == list(m1.FIELDS)
    rows = load_m1(config, split, data=str(path))
    assert {r.domain for r in rows} == set(m1.domains_of(config))
    assert {r.difficulty for r in rows} <= {1, 2, 3, 4, 5}
    assert len({r.id for r in rows}) == len(rows)
    assert load_m1(config, split, data=str(path), limit=7) == rows[:7]


@pytest.mark.parametrize(
    "row, message",
    [
        ({"id": "a", "domain": "math", "difficulty": 2}, "lacks prompt"),
        ({"id": "a", "domain": "poetry", "difficulty": 2, "prompt": "p"}, "domain 'poetry'"),
        ({"id": "a", "domain": "math", "difficulty": 6, "prompt": "p"}, "integer 1–5"),
        ({"id": "a", "domain": "math", "difficulty": "hard", "prompt": "p"}, "integer 1–5"),
    ],
)
def test_bad_rows_name_the_row(tmp_path, row, message):
    f = tmp_path / "rows.jsonl"
    f.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match=message):
        load_m1("5-domain", "train", data=str(f))


def test_duplicate_ids_and_wrong_split(tmp_path):
    f = tmp_path / "rows.jsonl"
    r = {"id": "a", "domain": "math", "difficulty": 1, "prompt": "p"}
    f.write_text(json.dumps(r) + "\n" + json.dumps(r) + "\n")
    with pytest.raises(InputError, match="appears twice"):
        load_m1("5", "train", data=str(f))
    with pytest.raises(InputError, match="splits train, test"):
        load_m1("5-domain", "validation")


def test_hub_unavailable_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    # huggingface_hub and datasets read the offline switch once, at import: when an earlier test
    # in this worker imported them, the variable alone is not seen and `datasets` retries the
    # network for ~23 s (1+2+4+8+8 s back-off). Set the switch they already read, as a user's
    # HF_HUB_OFFLINE=1 in the shell would have at import.
    for mod, names in (
        ("huggingface_hub.constants", ("HF_HUB_OFFLINE",)),
        ("datasets.config", ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")),
    ):
        if mod in sys.modules:
            for name in names:
                monkeypatch.setattr(sys.modules[mod], name, True)
    with pytest.raises(InputError) as e:
        load_m1("5-domain", "train")
    msg = str(e.value)
    assert "James-Cuda/tinyrouter-m1" in msg and "--train-data FILE" in msg and "\n" not in msg
