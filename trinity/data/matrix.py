"""Outcome matrices in the TinyRouter oracle-matrix JSON format.

    {"benchmark": "math500", "k": 4,
     "tasks": [{"id": "math500-0", "answer": "...", "per_model": {"model-a": [1, 0, 1, 1], ...}}]}

`OutcomeMatrix.solves` is the tensor S[question, model, sample] of 0/1 as float64. Model order
is the order of `per_model` keys in the first task — that is the order of the head's model rows.

A cell may hold more samples than another (`trinity collect --max-k`: more answers where a group's
top two models were not yet told apart). Loaded with `ragged="keep"`, `solves` holds the first
min-k samples of every cell (what per-sample uses replay) and `cells` every sample, so
`accuracy()` (a cell's label) is the mean of all of them and the JSON written back keeps them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from trinity.data.questions import Question, question_group
from trinity.errors import InputError
from trinity.io import atomic_write_json, read_json


@dataclass
class OutcomeMatrix:
    benchmark: str
    models: list[str]
    ids: list[str]
    solves: np.ndarray  # (Q, M, K) float64 in {0, 1}
    answers: list[Any] = field(default_factory=list)
    benchmarks: list[str] = field(default_factory=list)  # per question (for merged matrices)
    notes: list[str] = field(default_factory=list)  # what was reduced on load, in words
    # every sample of every cell [question][model] when their counts differ (None: `solves` has them all)
    cells: list[list[list[float]]] | None = None

    def __post_init__(self) -> None:
        if not self.answers:
            self.answers = [None] * len(self.ids)
        if not self.benchmarks:
            self.benchmarks = [self.benchmark] * len(self.ids)
        self._index = {qid: i for i, qid in enumerate(self.ids)}
        if self.cells is not None and {len(c) for row in self.cells for c in row} <= {self.k}:
            self.cells = None  # a subset whose cells `solves` holds whole

    @property
    def k(self) -> int:
        return int(self.solves.shape[2])

    @property
    def n_models(self) -> int:
        return len(self.models)

    def row(self, qid: str) -> int:
        return self._index[qid]

    def __contains__(self, qid: str) -> bool:
        return qid in self._index

    @property
    def ragged(self) -> bool:
        return self.cells is not None

    def draws(self) -> np.ndarray:
        """(Q, M) samples per cell (k everywhere unless ragged)."""
        if self.cells is None:
            return np.full(self.solves.shape[:2], self.k, dtype=np.int64)
        return np.array([[len(c) for c in row] for row in self.cells], dtype=np.int64).reshape(self.solves.shape[:2])

    def accuracy(self) -> np.ndarray:
        """(Q, M) mean correctness over every sample of a cell: the cached reward of each choice."""
        if self.cells is None:
            return self.solves.mean(axis=2)
        return np.array([[sum(c) / len(c) for c in row] for row in self.cells], dtype=np.float64).reshape(
            self.solves.shape[:2]
        )

    def subset(self, ids: Sequence[str]) -> "OutcomeMatrix":
        missing = [q for q in ids if q not in self._index]
        if missing:
            raise InputError(f"matrix has no row for question id(s): {', '.join(missing[:10])}")
        rows = [self._index[q] for q in ids]
        return OutcomeMatrix(
            self.benchmark,
            list(self.models),
            list(ids),
            self.solves[rows],
            [self.answers[r] for r in rows],
            [self.benchmarks[r] for r in rows],
            list(self.notes),
            None if self.cells is None else [self.cells[r] for r in rows],
        )

    def cell(self, i: int, j: int) -> list[float]:
        """Every sample of question row i, model j."""
        return list(self.solves[i, j]) if self.cells is None else self.cells[i][j]

    def to_json(self) -> dict:
        tasks = []
        for i, qid in enumerate(self.ids):
            tasks.append(
                {
                    "id": qid,
                    "answer": self.answers[i],
                    "benchmark": self.benchmarks[i],
                    "per_model": {m: [int(v) for v in self.cell(i, j)] for j, m in enumerate(self.models)},
                }
            )
        return {"benchmark": self.benchmark, "k": self.k, "tasks": tasks}


def group_means(acc: np.ndarray, groups: Sequence[str]) -> dict[str, np.ndarray]:
    """{group: (M,) mean of the rows of `acc` (N, M) in it}, `groups` naming each row's group."""
    g = np.asarray(groups)
    return {name: acc[g == name].mean(axis=0) for name in sorted(set(g.tolist()))}


def group_mean_rows(matrix: OutcomeMatrix, questions: list[Question], among: list[Question]) -> dict[str, np.ndarray]:
    """{id: (M,) accuracy} for each of `questions` the matrix has no row for: the mean accuracy of
    the rows of `among` in its group (`question_group`); a group without rows gets nothing."""
    have = [q for q in among if q.id in matrix]
    rows = [matrix.row(q.id) for q in have]
    means = group_means(matrix.accuracy()[rows], [question_group(q) for q in have]) if have else {}
    return {q.id: means[question_group(q)] for q in questions if q.id not in matrix and question_group(q) in means}


def matrix_from_json(obj: Any, where: str = "matrix", ragged: str = "error") -> OutcomeMatrix:
    """Parse and validate. A matrix whose sample counts differ: `ragged="truncate"` keeps the first
    min-k samples of every cell (recorded in `notes`); `"keep"` also keeps every sample in `cells`,
    which `accuracy()` averages; `"error"` refuses it."""
    if not isinstance(obj, dict) or "tasks" not in obj:
        raise InputError(f"{where}: not an oracle-matrix JSON (expected an object with 'tasks')")
    tasks = obj["tasks"]
    if not isinstance(tasks, list) or not tasks:
        raise InputError(f"{where}: the matrix has no tasks; collect outcomes first (trinity collect)")
    benchmark = str(obj.get("benchmark", "unknown"))
    first = tasks[0]
    if not isinstance(first, dict) or not isinstance(first.get("per_model"), dict) or not first["per_model"]:
        raise InputError(f"{where}: task 0 has no 'per_model' object")
    models = list(first["per_model"].keys())
    ids: list[str] = []
    answers: list[Any] = []
    benches: list[str] = []
    cells: list[list[list[float]]] = []
    missing_model: dict[str, list[str]] = {}
    extra_model: dict[str, list[str]] = {}
    bad_values: list[str] = []
    seen: set[str] = set()
    dups: list[str] = []
    for t_i, t in enumerate(tasks):
        if not isinstance(t, dict) or "id" not in t or not isinstance(t.get("per_model"), dict):
            raise InputError(f"{where}: task {t_i} lacks 'id' or 'per_model'")
        qid = str(t["id"])
        if qid in seen:
            dups.append(qid)
        seen.add(qid)
        pm = t["per_model"]
        for m in models:
            if m not in pm:
                missing_model.setdefault(m, []).append(qid)
        for m in pm:
            if m not in models:
                extra_model.setdefault(m, []).append(qid)
        row = []
        for m in models:
            vals = pm.get(m, [])
            if not isinstance(vals, list):
                vals = [vals]
            clean = []
            for v in vals:
                if isinstance(v, bool):
                    v = int(v)
                if not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)) or v not in (0, 1):
                    bad_values.append(f"{qid}/{m}={v!r}")
                    v = 0
                clean.append(float(v))
            row.append(clean)
        ids.append(qid)
        answers.append(t.get("answer"))
        benches.append(str(t.get("benchmark", benchmark)))
        cells.append(row)
    if dups:
        raise InputError(f"{where}: duplicate task ids: {', '.join(sorted(set(dups))[:10])}")
    if missing_model:
        m, q = next(iter(missing_model.items()))
        raise InputError(
            f"{where}: model {m!r} is missing from {len(q)} task(s), e.g. {', '.join(q[:5])}; "
            "every task must list every model"
        )
    if extra_model:
        m, q = next(iter(extra_model.items()))
        raise InputError(
            f"{where}: model {m!r} appears in task(s) {', '.join(q[:5])} but not in the "
            f"first task; every task must list the same models"
        )
    if bad_values:
        raise InputError(
            f"{where}: entries must be 0 or 1; bad: {', '.join(bad_values[:5])}"
            + (f" (+{len(bad_values) - 5} more)" if len(bad_values) > 5 else "")
        )
    lengths = {len(c) for row in cells for c in row}
    notes: list[str] = []
    if 0 in lengths:
        empty = [ids[i] for i, row in enumerate(cells) if any(len(c) == 0 for c in row)]
        raise InputError(f"{where}: task(s) with no samples for some model: {', '.join(empty[:5])}")
    full: list[list[list[float]]] | None = None
    if len(lengths) > 1:
        kmin = min(lengths)
        if ragged not in ("truncate", "keep"):
            raise InputError(
                f"{where}: ragged sample counts {sorted(lengths)} across tasks/models; "
                f"re-collect, or load with truncation to k={kmin}"
            )
        if ragged == "keep":
            full = cells
            notes.append(
                f"ragged sample counts {sorted(lengths)}: labels average every sample, per-sample uses "
                f"replay the first {kmin}"
            )
        else:
            notes.append(f"ragged sample counts {sorted(lengths)}: truncated every cell to the first {kmin}")
        cells = [[c[:kmin] for c in row] for row in cells]
    solves = np.asarray(cells, dtype=np.float64)
    declared_k = obj.get("k")
    if isinstance(declared_k, int) and declared_k != solves.shape[2] and not notes:
        notes.append(f"declared k={declared_k} but tasks hold {solves.shape[2]} samples; used the tasks")
    return OutcomeMatrix(benchmark, models, ids, solves, answers, benches, notes, full)


def load_matrix(path: str | Path, ragged: str = "error") -> OutcomeMatrix:
    path = Path(path)
    return matrix_from_json(read_json(path, "outcome matrix"), where=str(path), ragged=ragged)


def save_matrix(path: str | Path, matrix: OutcomeMatrix) -> None:
    atomic_write_json(path, matrix.to_json(), indent=None)


def merge_matrices(mats: Sequence[OutcomeMatrix]) -> OutcomeMatrix:
    """Stack matrices of several benchmarks (same pool, same k: the smallest count of a cell) into one."""
    if not mats:
        raise InputError("no matrices to merge")
    models = mats[0].models
    for m in mats[1:]:
        if m.models != models:
            raise InputError(f"matrices disagree on the pool: {models} vs {m.models}")
        if m.k != mats[0].k:
            raise InputError(f"matrices disagree on k: {mats[0].k} vs {m.k}")
    ids = [q for m in mats for q in m.ids]
    if len(set(ids)) != len(ids):
        raise InputError("merged matrices share question ids; ids must be unique across benchmarks")
    return OutcomeMatrix(
        "+".join(m.benchmark for m in mats),
        list(models),
        ids,
        np.concatenate([m.solves for m in mats]),
        [a for m in mats for a in m.answers],
        [b for m in mats for b in m.benchmarks],
        [n for m in mats for n in m.notes],
        None
        if not any(m.ragged for m in mats)
        else [[m.cell(i, j) for j in range(len(models))] for m in mats for i in range(len(m.ids))],
    )
