"""The questions MiniRouter's validator scores (issue 11, point 12), so that training can keep
them out of what it learns from and a local estimate can read exactly them.

MiniRouter evaluates MATH-500 (`HuggingFaceH4/MATH-500`, test, 500 rows, task ids `math500-<row>`
as ours) through `orchestration/dataset.load_tasks(benchmark, "test", max_items, seed)`: the rows
in dataset order, `random.Random(seed).shuffle`, then the first `max_items` — 20 items, seed 0;
a challenger is promoted at a score ≥ 0.8 and above the king.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from trinity.competition.profiles import MINIROUTER_PROFILE

_RULE = MINIROUTER_PROFILE.scoring  # one source: the profile's promotion rule
MINIROUTER_EVAL_BENCHMARK = str(_RULE.benchmark)
MINIROUTER_EVAL_ROWS = 500  # MATH-500 test
MINIROUTER_EVAL_ITEMS = _RULE.n_items
MINIROUTER_EVAL_SEED = int(_RULE.shuffle_seed or 0)
MINIROUTER_PROMOTION_SCORE = _RULE.threshold


def minirouter_eval_ids(
    n_rows: int = MINIROUTER_EVAL_ROWS, n_items: int = MINIROUTER_EVAL_ITEMS, seed: int = MINIROUTER_EVAL_SEED
) -> list[str]:
    """The ids of the items MiniRouter's validator scores, in the order it reads them."""
    ids = [f"{MINIROUTER_EVAL_BENCHMARK}-{i}" for i in range(n_rows)]
    random.Random(seed).shuffle(ids)
    return ids[:n_items]


def eval_items_in_training(train_ids: Iterable[str], n_rows: int = MINIROUTER_EVAL_ROWS) -> list[str]:
    """Which of MiniRouter's scored items are among `train_ids` (its order)."""
    train = set(train_ids)
    return [i for i in minirouter_eval_ids(n_rows) if i in train]
