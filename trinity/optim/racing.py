"""Racing within a generation (successive halving): every candidate meets a small batch of the
generation's questions; the better half goes on to the next batch, and so on, so the questions a
generation pays for are spent on candidates that can still be best.

`race_plan(P, m)`: the stages as (candidates still racing, questions seen by the end of the stage).
The first batch is a quarter of m (at least 1); each stage doubles the questions seen and halves
the candidates (never below 2), the last stage ends at m. At P 32 × m 16: 32 on 4, 16 on 8,
8 on 16 = 128 + 64 + 128 = 320 sessions instead of 512.
"""

from __future__ import annotations

import math


def race_plan(popsize: int, m: int) -> list[tuple[int, int]]:
    if m <= 1 or popsize <= 2:
        return [(popsize, m)]
    seen = max(1, math.ceil(m / 4))
    n = popsize
    plan = [(n, seen)]
    while seen < m:
        seen = min(m, seen * 2)
        n = max(2, math.ceil(n / 2))
        plan.append((n, seen))
    return plan


def race_sessions(popsize: int, m: int) -> int:
    """Sessions one raced generation runs."""
    total, before = 0, 0
    for n, seen in race_plan(popsize, m):
        total += n * (seen - before)
        before = seen
    return total
