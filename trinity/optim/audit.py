"""The competition's overfit gate on a local audit split (issue 14).

TinyRouter scores each benchmark's hidden eval set and a separate audit set with the same cached
lookup; gap = eval accuracy − audit accuracy; gap > 0.15 rejects the submission, gap > 0.08
multiplies the benchmark's score by 0.85. Locally the run's `audit` split (config `splits.audit`)
plays the audit set and val (the split the best θ was selected on) / test play the eval set.

The rule and its numbers are TinyRouter's profile's (`trinity.competition.profiles`, Scoring.overfit):
the score estimate (`trinity.analysis.score`) applies the same one.
"""

from __future__ import annotations

from typing import Any

from trinity.competition.profiles import TINYROUTER_PROFILE

_RULE = TINYROUTER_PROFILE.scoring
GAP_REJECT = _RULE.overfit_reject
GAP_PENALISE = _RULE.overfit_penalise
PENALTY_FACTOR = _RULE.overfit_factor


def gap_factor(gap: float | None) -> tuple[float, str]:
    """(score multiplier, reading) for a hidden − audit accuracy gap; None = not measured."""
    if gap is None:
        return 1.0, "not measured"
    factor, rejected = _RULE.overfit(gap)
    if rejected:
        return factor, f"reject (gap > {GAP_REJECT})"
    if factor != 1.0:
        return factor, f"x{PENALTY_FACTOR} (gap > {GAP_PENALISE})"
    return factor, "clean"


def overfit_report(acc: dict[str, dict[str, float]]) -> dict[str, Any]:
    """From {split: {benchmark: accuracy}} (splits val/test/audit; benchmark "all" = pooled), the
    gaps val − audit and test − audit per benchmark with their factors."""
    audit = acc.get("audit") or {}
    out: dict[str, Any] = {
        "rule": f"gap = hidden - audit accuracy; > {GAP_REJECT} rejects, > {GAP_PENALISE} x{PENALTY_FACTOR} "
        "(TinyRouter's overfit gate); hidden = val (selection split) or test",
        "gaps": {},
    }
    for hidden in ("val", "test"):
        for b, a in (acc.get(hidden) or {}).items():
            if b not in audit:
                continue
            gap = a - audit[b]
            factor, reading = gap_factor(gap)
            out["gaps"].setdefault(b, {})[f"{hidden}_minus_audit"] = {"gap": gap, "factor": factor, "reading": reading}
    return out
