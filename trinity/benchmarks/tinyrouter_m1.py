"""The `tinyrouter_m1` data: TinyRouter Milestone 1's triage rows, `id | domain | difficulty |
prompt`, for the `5-domain` and `20-domain` configs of the Hub dataset `James-Cuda/tinyrouter-m1`
(splits `train` and `test`), or a local file in the same schema (JSONL, JSON array or parquet).

    rows = load_m1("5-domain", "train")                  # the Hub (on a user's machine)
    rows = load_m1("5-domain", "test", data="test.jsonl")  # a local copy

The domain lists and the config names are `trinity.competition.m1`'s. A row whose domain is not
in the config's list, or whose difficulty is not 1–5, is an error naming the row.
"""

from __future__ import annotations

from dataclasses import dataclass

from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.competition import m1
from trinity.errors import InputError

NAME = "tinyrouter_m1"


@dataclass(frozen=True)
class M1Row:
    id: str
    domain: str
    difficulty: int  # 1..5
    prompt: str


def to_rows(raw: list[dict], config: str, where: str) -> list[M1Row]:
    domains = set(m1.domains_of(config))
    out: list[M1Row] = []
    seen: set[str] = set()
    for i, r in enumerate(raw):
        missing = [f for f in m1.FIELDS if f not in r]
        if missing:
            raise InputError(
                f"{where}: row {i} lacks {', '.join(missing)} — tinyrouter-m1 rows have {' | '.join(m1.FIELDS)}"
            )
        dom = str(r["domain"])
        if dom not in domains:
            raise InputError(
                f"{where}: row {i} has domain {dom!r}, not one of the {config} domains ({', '.join(m1.domains_of(config))})"
            )
        try:
            diff = int(r["difficulty"])
        except (TypeError, ValueError):
            diff = 0
        if not 1 <= diff <= m1.N_DIFFICULTY:
            raise InputError(f"{where}: row {i} has difficulty {r['difficulty']!r}; it must be an integer 1–5")
        rid = str(r["id"])
        if rid in seen:
            raise InputError(f"{where}: id {rid!r} appears twice; ids must be unique")
        seen.add(rid)
        out.append(M1Row(rid, dom, diff, str(r["prompt"])))
    return out


def load_m1(config: str, split: str, data: str | None = None, limit: int | None = None) -> list[M1Row]:
    """The rows of one split, from `data` (a local file) or the Hub dataset."""
    config = m1.canonical_config(config)
    if data:
        where = str(data)
        raw = read_rows_file(data, f"tinyrouter-m1 {config}")
    else:
        if split not in m1.HUB_SPLITS:
            raise InputError(f"tinyrouter-m1 has splits {', '.join(m1.HUB_SPLITS)}, not {split!r}")
        where = f"{m1.HUB_DATASET} {config}/{split}"
        try:
            raw = load_hub_rows(m1.HUB_DATASET, config, split)
        except InputError as e:
            why = str(e).split(": pass --data")[0]
            raise InputError(
                f"{why} [{config}/{split}]: pass --{split}-data FILE with its rows (id | domain | difficulty | prompt)"
            ) from None
    rows = to_rows(raw, config, where)
    if limit is not None:
        if limit < 1:
            raise InputError(f"--limit must be >= 1, got {limit}")
        rows = rows[:limit]
    return rows
