"""Where the analysis commands get their matrix, questions and question subset from.

`practice` names the built-in simulated setup everywhere a matrix or questions file is asked for.
A split (train / val / test) comes, in this order, from a run's recorded splits, from a questions
file split with `trinity.benchmarks.split_questions(questions, seed)` (the trainer's split), or —
when only a matrix is given — from questions rebuilt from the matrix rows (kind inferred from the
benchmark; the source is stated).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trinity.benchmarks import split_questions
from trinity.benchmarks.practice import practice_questions
from trinity.config import PRACTICE
from trinity.data.matrix import OutcomeMatrix, load_matrix
from trinity.data.questions import SPLITS, Question, load_questions
from trinity.errors import InputError
from trinity.practice.simulation import practice_matrix
from trinity.runs.records import read_run_meta

SPLIT_CHOICES = (*SPLITS, "all")


def resolve_matrix(spec: str) -> OutcomeMatrix:
    """A matrix file (ragged sample counts are truncated to the smallest k, with a note) or
    `practice`."""
    if spec == PRACTICE:
        return practice_matrix()
    path = Path(spec)
    if path.is_dir():
        raise InputError(f"{path} is a directory; pass the outcome-matrix JSON file")
    return load_matrix(path, ragged="truncate")


def resolve_questions(spec: str) -> list[Question]:
    if spec == PRACTICE:
        return practice_questions()
    return load_questions(spec)


@dataclass
class Selection:
    ids: list[str]
    source: str  # in words: where the split came from


def _matrix_as_questions(matrix: OutcomeMatrix) -> list[Question]:
    return [
        Question.from_json({"id": qid, "benchmark": b, "question": "", "answer": a})
        for qid, b, a in zip(matrix.ids, matrix.benchmarks, matrix.answers)
    ]


def select_ids(
    matrix: OutcomeMatrix,
    split: str = "test",
    benchmark: str | None = None,
    run: str | Path | None = None,
    questions: str | None = None,
    split_seed: int = 0,
) -> Selection:
    """The matrix ids of `split` (and `benchmark`), in matrix order, and where the split came from."""
    if split not in SPLIT_CHOICES:
        raise InputError(f"unknown split {split!r}; use one of {', '.join(SPLIT_CHOICES)}")
    if split == "all":
        ids, source = list(matrix.ids), "all matrix rows"
    elif run is not None:
        recorded = read_run_meta(run).splits
        if split not in recorded:
            raise InputError(f"{run}: run.json records no {split!r} split; train the run first or pass --split all")
        ids, source = list(recorded[split]), f"the {split} split recorded in {Path(run) / 'run.json'}"
    elif questions is not None:
        ids = split_questions(resolve_questions(questions), split_seed)[split]
        source = f"the {split} split of {questions} (seed {split_seed})"
    elif matrix.benchmark == PRACTICE:
        ids = split_questions(resolve_questions(PRACTICE), split_seed)[split]
        source = f"the {split} split of the practice questions (seed {split_seed})"
    else:
        ids = split_questions(_matrix_as_questions(matrix), split_seed)[split]
        source = (
            f"the {split} split of the matrix rows (seed {split_seed}, kind inferred from the "
            "benchmark); pass --run or --questions to use a run's split"
        )
    wanted = set(ids)
    missing = [q for q in ids if q not in matrix]
    if missing and split != "all":
        raise InputError(
            f"{len(missing)} question(s) of {source} have no matrix row (e.g. "
            f"{', '.join(missing[:5])}); use the matrix the split was made from"
        )
    rows = [q for q in matrix.ids if q in wanted]
    if benchmark:
        known = sorted(set(matrix.benchmarks))
        if benchmark not in known:
            raise InputError(f"benchmark {benchmark!r} is not in the matrix (it has {', '.join(known)})")
        rows = [q for q in rows if matrix.benchmarks[matrix.row(q)] == benchmark]
        source += f", benchmark {benchmark}"
    if not rows:
        raise InputError(f"no questions left in {source}; pick another split or benchmark")
    return Selection(rows, source)
