"""trinity.benchmarks — benchmark adapters (DESIGN §7): math500, mmlu, livecodebench, practice.

    get_benchmark(name) -> Benchmark   (see trinity.benchmarks.base for the interface)
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
