"""Where benchmark rows come from: a local file in the dataset's own schema, or the HF Hub.

Local files: JSONL (one row a line), a JSON array, or parquet; for LiveCodeBench also a folder
holding the dataset's `test.jsonl … test6.jsonl`. Online: `datasets.load_dataset` (LiveCodeBench:
its raw JSONL files through `huggingface_hub`, because the repo's loading script is not supported
by `datasets` ≥ 4).

Nothing here falls back to a toy set: a source that cannot be read is an `InputError` saying
which dataset and what to pass instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trinity.errors import InputError
from trinity.hub import hub_reachable, offline_vars_set

OFFLINE_HINT = "pass --data FILE with the dataset's rows (JSONL/parquet)"


def read_rows_file(path: str | os.PathLike, what: str) -> list[dict[str, Any]]:
    """Rows from a local JSONL / JSON-array / parquet file; a bad line is an error naming it."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} data file not found: {path}")
    if path.is_dir():
        raise InputError(f"{what} data path {path} is a folder; pass a JSONL or parquet file")
    if path.suffix == ".parquet":
        return _read_parquet(path, what)
    with open(path, "rb") as f:
        first = f.read(4096).lstrip()
    if first.startswith(b"["):  # one JSON array
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text; pass a JSONL or parquet file of {what} rows") from None
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
        if not isinstance(rows, list):
            raise InputError(f"{path}: expected a JSON array of rows")
    else:  # JSONL, streamed: LiveCodeBench files run to gigabytes
        rows = []
        with open(path, "rb") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise InputError(f"{path}: line {lineno} is not valid JSON; fix or delete that line") from None
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(f"{path}: row {i} is not a JSON object")
    if not rows:
        raise InputError(f"{path}: no rows in file")
    return rows


def _read_parquet(path: Path, what: str) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # lazy: a missing module is reported, not raised at import
    except ImportError:  # pragma: no cover — pyarrow comes with `datasets`
        raise InputError(f"reading {path} needs pyarrow (pip install pyarrow)") from None
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # noqa: BLE001 — pyarrow raises many kinds for a bad file
        raise InputError(f"{path}: not a readable parquet file ({type(e).__name__}: {e})") from None
    if not rows:
        raise InputError(f"{path}: no rows in file")
    return rows


def _unavailable(repo_id: str, why: str) -> InputError:
    return InputError(f"could not load {repo_id} (offline?{' ' + why if why else ''}): {OFFLINE_HINT}")


def check_hub(repo_id: str) -> None:
    """Raise the offline InputError now unless the Hub (or the local HF cache) can serve."""
    if offline_vars_set():
        return  # datasets / huggingface_hub will try the local cache only
    ok, why = hub_reachable()
    if not ok:
        raise _unavailable(repo_id, f"{why} reaching the Hub")


def load_hub_rows(repo_id: str, config: str | None, split: str, revision: str | None = None) -> list[dict[str, Any]]:
    """All rows of one split through `datasets` (cached under the HF cache dir); `revision`: a
    commit, tag or branch of the dataset repo (None: its main branch)."""
    check_hub(repo_id)
    try:
        import datasets  # lazy: a missing module is reported, not raised at import
    except ImportError:
        raise InputError(f"loading {repo_id} needs the 'datasets' package; {OFFLINE_HINT}") from None
    try:
        ds = (
            datasets.load_dataset(repo_id, config, split=split, revision=revision)
            if config
            else datasets.load_dataset(repo_id, split=split, revision=revision)
        )
    except Exception as e:  # noqa: BLE001 — datasets raises many kinds (ConnectionError, FileNotFound …)
        raise _unavailable(repo_id, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}") from None
    return ds.to_list()


def download_hub_file(repo_id: str, filename: str, revision: str | None = None) -> Path:
    """One raw file of a Hub dataset repo (cached by huggingface_hub)."""
    check_hub(repo_id)
    from huggingface_hub import hf_hub_download  # lazy: huggingface_hub loaded only when used

    try:
        return Path(hf_hub_download(repo_id=repo_id, filename=filename, repo_type="dataset", revision=revision))
    except Exception as e:  # noqa: BLE001
        raise _unavailable(repo_id, f"{type(e).__name__} fetching {filename}") from None
