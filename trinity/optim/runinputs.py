"""The questions, outcome matrix and splits of a run, loaded and cross-checked (issue 2, item 7).

`load_run_inputs(run_dir or config)` rebuilds exactly what a run trained on, so `trinity eval`,
`trinity score` and the app see the same questions, model order and splits as the trainer.

Cross-checks, all before any training: every question has a matrix row, every matrix row has a
question, the matrix has tasks and every task lists every model (the last two are checked while
parsing, in `trinity.data.matrix`). A live run's matrix needs only a train row of every group
(`check_groups`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from trinity.benchmarks import BENCHMARK_NAMES, get_benchmark, split_questions
from trinity.benchmarks.practice import practice_questions
from trinity.config import PRACTICE, TrainConfig, validate_config
from trinity.data.matrix import OutcomeMatrix, load_matrix, merge_matrices
from trinity.data.questions import Question, load_questions, question_group
from trinity.errors import InputError
from trinity.io import canonical_json
from trinity.practice.simulation import practice_matrix, practice_setup
from trinity.runs.rundir import RunDir


class RunInputs(NamedTuple):
    questions: list[Question]  # in input order, after the benchmark filter
    matrix: OutcomeMatrix | None  # rows in the order of `questions`; None in live mode without one
    # (a live run's matrix may lack the test split's rows: training reads only train and val)
    splits: dict[str, list[str]]  # {"train", "val", "test"} -> question ids


def carve_audit(
    splits: dict[str, list[str]], bench_of: dict[str, str], seed: int, share: float
) -> dict[str, list[str]]:
    """Move `share` of each benchmark's test ids (a seeded pick over the sorted ids: independent of
    file order) into an `audit` split, held out from training and from selection like TinyRouter's
    audit set, so an overfit head shows as a val/test − audit gap."""
    audit: set[str] = set()
    for b in sorted({bench_of[i] for i in splits["test"]}):
        test = sorted(i for i in splits["test"] if bench_of[i] == b)
        order = [test[i] for i in np.random.RandomState(seed + 7).permutation(len(test))]
        audit.update(order[: int(round(share * len(order)))])
    out = dict(splits)
    out["test"] = [i for i in splits["test"] if i not in audit]
    out["audit"] = [i for i in splits["test"] if i in audit]
    return out


def _ids_line(ids: list[str]) -> str:
    return ", ".join(ids[:8]) + (f" (+{len(ids) - 8} more)" if len(ids) > 8 else "")


def cross_check(
    questions: list[Question], matrix: OutcomeMatrix, qsrc: str, msrc: str, need: set[str] | None = None
) -> None:
    """Every question (of `need`, when given) has a matrix row and every row a question; else name
    the ids."""
    qids = {q.id for q in questions}
    no_row = [q.id for q in questions if q.id not in matrix and (need is None or q.id in need)]
    if no_row:
        raise InputError(
            f"{len(no_row)} question(s) of {qsrc} have no row in the matrix {msrc}: "
            f"{_ids_line(no_row)}; collect them (trinity collect) or drop them from the questions"
        )
    no_question = [i for i in matrix.ids if i not in qids]
    if no_question:
        raise InputError(
            f"{len(no_question)} matrix row(s) of {msrc} have no question in {qsrc}: "
            f"{_ids_line(no_question)}; use the questions file the matrix was collected on"
        )


def _load_questions(cfg: TrainConfig) -> list[Question]:
    if cfg.questions is None:
        raise InputError("no questions given; pass --questions FILE.jsonl (or 'practice')")
    if cfg.questions == PRACTICE:
        return practice_questions()
    if "," in cfg.questions:  # one file per benchmark (composite training)
        qs = [q for part in cfg.questions.split(",") if part for q in load_questions(part)]
        seen: set[str] = set()
        dup = [q.id for q in qs if q.id in seen or seen.add(q.id)]  # type: ignore[func-returns-value]
        if dup:
            raise InputError(
                f"question id(s) {_ids_line(dup)} appear in more than one of {cfg.questions}; "
                "ids must be unique across the files"
            )
        return qs
    return load_questions(cfg.questions)


def _load_matrix(cfg: TrainConfig) -> OutcomeMatrix | None:
    if cfg.matrix is None:
        if cfg.mode == "cached":
            raise InputError("cached mode needs an outcome matrix; pass --matrix FILE.json (or 'practice')")
        return None
    if cfg.matrix == PRACTICE:
        return practice_matrix(setup=practice_setup(cfg.practice_config))
    if "," in cfg.matrix:  # one matrix per benchmark (composite training): same pool, same k
        return merge_matrices([load_matrix(part, ragged="keep") for part in cfg.matrix.split(",") if part])
    # ragged: `trinity collect --max-k` asked more where a group's top two were close; the labels
    # (`accuracy()`) average every answer
    return load_matrix(cfg.matrix, ragged="keep")


def inputs_from_config(cfg: TrainConfig) -> RunInputs:
    """Load, cross-check, filter by benchmark, and split by the config's seed."""
    questions = _load_questions(cfg)
    matrix = _load_matrix(cfg)
    # A live run reads the matrix only for train and val (the warm start's labels, validation); its
    # test split is evaluated live, so a matrix collected on train + val alone is enough, and one
    # with some train rows of every group (`trinity collect --per-group N`; the other questions get
    # their group's mean): checked once the splits are known.
    partial = cfg.mode == "live"
    if matrix is not None:
        cross_check(questions, matrix, str(cfg.questions), str(cfg.matrix), need=set() if partial else None)
    if cfg.benchmarks:
        known = sorted({q.benchmark for q in questions})
        unknown = [b for b in cfg.benchmarks if b not in known]
        if unknown:
            raise InputError(
                f"benchmark(s) {', '.join(unknown)} not in {cfg.questions} "
                f"(it has {', '.join(known)}); fix --benchmarks"
            )
        questions = [q for q in questions if q.benchmark in cfg.benchmarks]
    if matrix is not None:
        matrix = matrix.subset([q.id for q in questions if q.id in matrix])
    if cfg.mode == "live":  # a grader that cannot run on this machine fails before the first paid call
        for name in sorted({q.benchmark for q in questions} & set(BENCHMARK_NAMES)):
            get_benchmark(name).preflight([q for q in questions if q.benchmark == name])
    chosen = getattr(cfg, "split_seed", None)
    split_seed: int = cfg.seed if chosen is None else int(chosen)
    splits = split_questions(questions, split_seed, cfg.splits.as_tuple())
    if cfg.splits.audit > 0:
        fractions = cfg.splits.as_tuple()
        splits = carve_audit(
            splits,
            {q.id: q.benchmark for q in questions},
            split_seed,
            cfg.splits.audit / fractions[2] if fractions[2] > 0 else 0.0,
        )
    if not splits["train"]:
        raise InputError(f"the train split is empty ({len(questions)} questions); add questions or raise splits.train")
    if matrix is not None and partial:
        check_groups(questions, matrix, splits, str(cfg.matrix))
    return RunInputs(questions, matrix, splits)


def check_groups(questions: list[Question], matrix: OutcomeMatrix, splits: dict[str, list[str]], msrc: str) -> None:
    """A live run's matrix: the warm start and validation give a train or val question without a
    row its group's mean (`question_group`), so every group of the train split needs a train row
    in the matrix, and a val question without a row a group with rows; else name the groups."""
    by_id = {q.id: q for q in questions}
    train = [by_id[i] for i in splits["train"]]
    val = [by_id[i] for i in splits["val"]]
    if all(q.id in matrix for q in train + val):
        return
    with_rows = {question_group(q) for q in train if q.id in matrix}
    missing = sorted({question_group(q) for q in train} - with_rows)
    any_rows = {question_group(by_id[i]) for i in matrix.ids if i in by_id}
    missing += sorted({question_group(q) for q in val if q.id not in matrix} - any_rows - set(missing))
    if missing:
        raise InputError(
            f"the matrix {msrc} has no train row for group(s) {', '.join(missing)}; a live run needs at "
            "least one per group (trinity collect --per-group N)"
        )


def inputs_digest(inputs: RunInputs) -> str:
    """sha256 of what training reads: the questions (id, benchmark, kind, text) and the matrix
    (ids, models, outcomes). A resume refuses inputs whose digest changed."""
    h = hashlib.sha256()
    for q in inputs.questions:
        h.update(canonical_json([q.id, q.benchmark, q.kind, q.question]).encode())
    if inputs.matrix is not None:
        h.update(canonical_json([inputs.matrix.ids, inputs.matrix.models]).encode())
        h.update(inputs.matrix.solves.astype("<f8").tobytes())
        if inputs.matrix.ragged:  # the samples past the first min-k (an even matrix: the digest as before)
            h.update(canonical_json(inputs.matrix.to_json()["tasks"]).encode())
    return h.hexdigest()[:16]


def load_run_inputs(source: str | os.PathLike[str] | RunDir | TrainConfig) -> RunInputs:
    """From a run directory (its resolved config and recorded splits) or from a TrainConfig."""
    if isinstance(source, TrainConfig):
        return inputs_from_config(source)
    run = source if isinstance(source, RunDir) else RunDir(Path(source))
    meta = run.meta()
    cfg = validate_config(meta.config.to_json(), where=f"{run.run_json} config")
    inputs = inputs_from_config(cfg)
    recorded = meta.splits
    if recorded:
        have = {q.id for q in inputs.questions}
        gone = [i for part in recorded.values() for i in part if i not in have]
        if gone:
            raise InputError(
                f"{run.path}: the run's questions changed since it was trained; "
                f"{len(gone)} recorded id(s) are gone: {_ids_line(gone)}"
            )
        inputs = RunInputs(inputs.questions, inputs.matrix, {k: list(v) for k, v in recorded.items()})
    recorded_digest = meta.inputs_digest
    if recorded_digest and inputs_digest(inputs) != recorded_digest:
        raise InputError(
            f"{run.path}: the questions or matrix files changed since the run was started "
            f"({cfg.questions}, {cfg.matrix}); restore them, or start a new run"
        )
    models = meta.models
    if models and inputs.matrix is not None and list(models) != inputs.matrix.models:
        raise InputError(
            f"{run.path}: the matrix's models {inputs.matrix.models} differ from the run's "
            f"{models}; use the matrix the run was trained on"
        )
    return inputs
