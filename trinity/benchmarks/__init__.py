"""trinity.benchmarks — benchmark adapters (docs/CONTRACTS.md, Benchmarks): math500, mmlu, livecodebench, practice,
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


def split_questions(
    questions: list, seed: int, fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
) -> dict[str, list[str]]:
    """{"train", "val", "test"} ids: the one split of the trainer, `collect` and the analyses.

    LiveCodeBench questions loaded with a release split (`extra["lcb_split"]`) split by release
    (test = problems released after the training release, so test ⊄ train); every other question
    by seed with `fractions`, exactly as `trinity.data.questions.split_ids` (its stratified groups
    are independent, so splitting them apart is the same as splitting them together)."""
    from trinity.data.questions import split_ids  # lazy: numpy + PyYAML kept off the CLI start

    lcb = [q for q in questions if q.benchmark == "livecodebench" and "lcb_split" in q.extra]
    rest = [q for q in questions if not (q.benchmark == "livecodebench" and "lcb_split" in q.extra)]
    splits = split_ids(rest, seed, fractions) if rest else {"train": [], "val": [], "test": []}
    if lcb:
        for k, ids in get_benchmark("livecodebench").split(lcb, seed).items():
            splits[k] = splits[k] + ids
    return splits
