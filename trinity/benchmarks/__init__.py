"""trinity.benchmarks — benchmark adapters (DESIGN §7): math500, mmlu, livecodebench, practice,
gpqa, aime, mmlu_pro, bbh, ifeval, bfcl_simple, humaneval.

    get_benchmark(name) -> Benchmark   (see trinity.benchmarks.base for the interface)
    split_questions(questions, seed)   train/val/test ids for a mix of benchmarks
    BENCHMARK_NAMES

Importing this package loads neither `datasets` nor sympy; they load when a benchmark is read
from the Hub or graded.
"""

from __future__ import annotations

import importlib

from trinity.errors import InputError

_ADAPTERS = {
    "math500": ("trinity.benchmarks.math500", "Math500"),
    "mmlu": ("trinity.benchmarks.mmlu", "MMLU"),
    "livecodebench": ("trinity.benchmarks.livecodebench", "LiveCodeBench"),
    "practice": ("trinity.benchmarks.practice", "Practice"),
    "gpqa": ("trinity.benchmarks.gpqa", "GPQA"),
    "aime": ("trinity.benchmarks.aime", "AIME"),
    "mmlu_pro": ("trinity.benchmarks.mmlu_pro", "MMLUPro"),
    "bbh": ("trinity.benchmarks.bbh", "BBH"),
    "ifeval": ("trinity.benchmarks.ifeval", "IFEval"),
    "bfcl_simple": ("trinity.benchmarks.bfcl_simple", "BFCLSimple"),
    "humaneval": ("trinity.benchmarks.humaneval", "HumanEval"),
}
BENCHMARK_NAMES = tuple(_ADAPTERS)


def get_benchmark(name: str):
    """A fresh adapter instance for `name`; InputError naming the known ones otherwise."""
    if name not in _ADAPTERS:
        raise InputError(f"unknown benchmark {name!r}: use one of {', '.join(BENCHMARK_NAMES)}")
    module, cls = _ADAPTERS[name]
    return getattr(importlib.import_module(module), cls)()


def list_benchmarks() -> list:
    return [get_benchmark(n) for n in BENCHMARK_NAMES]


def split_questions(questions: list, seed: int) -> dict[str, list[str]]:
    """{"train", "val", "test"} ids for questions of any mix of benchmarks: each benchmark splits
    its own questions (livecodebench by release/date, so its test ⊄ train; the others exactly as
    `trinity.data.questions.split_ids`, which gives the same ids as splitting them all at once)."""
    from trinity.data.questions import split_ids

    groups: dict[str, list] = {}
    for q in questions:
        groups.setdefault(q.benchmark, []).append(q)
    out: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for name in sorted(groups):
        part = get_benchmark(name).split(groups[name], seed) if name in _ADAPTERS else \
            split_ids(groups[name], seed)
        for k in out:
            out[k] += part[k]
    return out
