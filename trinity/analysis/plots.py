"""PNG plots for `--plot FILE.png` (matplotlib, Agg backend, imported only when asked for)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from trinity.analysis.stats import CI
from trinity.errors import InputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from trinity.analysis.baselines import BaselineReport
    from trinity.analysis.evaluate import EvalReport
    from trinity.analysis.oracle import OracleReport

ROUTER = "#1f77b4"
SINGLE = "#8c8c8c"
BEST = "#2ca02c"
RANDOM = "#ff7f0e"
ORACLE = "#9467bd"


def pyplot() -> ModuleType:
    import matplotlib  # lazy: matplotlib loaded only when used

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # lazy: matplotlib loaded only when used

    return plt


def check_plot_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise InputError(f"--plot {path}: the plot is a PNG; give a file name ending in .png")
    if path.parent and not path.parent.exists():
        raise InputError(f"--plot {path}: folder {path.parent} does not exist")
    return path


def _ci(c: CI | dict[str, Any]) -> CI:
    return CI(**c) if isinstance(c, dict) else c


def _bars(
    ax: Axes,
    labels: list[str],
    cis: Sequence[CI | dict[str, Any]],
    colors: list[str],
    title: str,
    xlabel: str = "accuracy",
) -> None:
    """Horizontal bars with 95% interval whiskers and the value printed at the bar end."""
    bars = [_ci(c) for c in cis]
    ys = list(range(len(labels)))[::-1]
    vals = [c.point for c in bars]
    ax.barh(ys, vals, color=colors, height=0.6)
    for y, c in zip(ys, bars):
        if c.hi > c.lo:  # points without an interval get no whisker
            ax.errorbar(
                c.point,
                y,
                xerr=[[max(0.0, c.point - c.lo)], [max(0.0, c.hi - c.point)]],
                color="#333333",
                capsize=4,
                lw=1.2,
            )
    for y, c in zip(ys, bars):
        ax.text(min(c.hi, 1.0) + 0.01, y, f"{c.point:.3f}", va="center", fontsize=9)
    ax.set_yticks(ys, labels)
    ax.set_xlim(0, 1.12)
    ax.set_xlabel(f"{xlabel} (bars: 95% interval)")
    ax.set_title(title, fontsize=11, loc="left")
    ax.grid(axis="x", alpha=0.3)


def _diff_panel(
    ax: Axes,
    labels: list[str],
    cis: Sequence[CI | dict[str, Any]],
    title: str,
    bands: Sequence[tuple[float, str]] = (),
) -> None:
    diffs = [_ci(c) for c in cis]
    ys = list(range(len(labels)))[::-1]
    for y, c in zip(ys, diffs):
        color = "#2ca02c" if c.lo > 0 else ("#d62728" if c.hi < 0 else "#7f7f7f")
        ax.errorbar(
            c.point, y, xerr=[[c.point - c.lo], [c.hi - c.point]], fmt="o", color=color, capsize=5, markersize=7, lw=2
        )
        ax.text(
            c.hi,
            y + 0.2,
            f"{c.point:+.3f} [{c.lo:+.3f}, {c.hi:+.3f}]",
            fontsize=8,
            ha="right",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
        )
    ax.axvline(0, color="black", lw=1)
    for x, label in bands:
        ax.axvline(x, color="#bbbbbb", lw=1, ls="--")
        ax.text(x, ys[0] + 0.45 if ys else 0.45, label, fontsize=8, color="#777777", ha="left")
    ax.set_yticks(ys, labels)
    ax.set_ylim(-0.7, len(labels) - 0.2)
    span = max([abs(c.lo) for c in diffs] + [abs(c.hi) for c in diffs] + [0.05])
    ax.set_xlim(-span * 1.3, span * 1.3)
    ax.set_title(title, fontsize=11, loc="left")
    ax.grid(axis="x", alpha=0.3)


def plot_oracle(rep: OracleReport, path: str | Path) -> Path:
    path = check_plot_path(path)
    plt = pyplot()
    labels = [m for m in rep.models]
    cis = list(rep.per_model)
    colors = [BEST if m == rep.best_single else SINGLE for m in rep.models]
    cf = rep.crossfit
    labels.append("naive oracle (biased ↑)")
    cis.append(CI(rep.naive_oracle, rep.naive_oracle, rep.naive_oracle, "point"))
    colors.append("#d9c8ec")
    if cf:
        labels += ["cross-fit best single", "cross-fit oracle"]
        cis += [
            CI(cf["best_single"], cf["best_single"], cf["best_single"], "point"),
            CI(cf["oracle"], cf["oracle"], cf["oracle"], "point"),
        ]
        colors += [BEST, ORACLE]
    if rep.router:
        a = rep.router["accuracy"]
        labels.append("trained router")
        cis.append(CI(a, a, a, "point"))
        colors.append(ROUTER)
    fig, (ax1, ax2) = plt.subplots(
        2, 1, figsize=(8.5, 3.2 + 0.42 * len(labels)), gridspec_kw={"height_ratios": [len(labels), 2.2]}
    )
    _bars(ax1, labels, cis, colors, f"Oracle ceiling — {rep.benchmark}: {rep.n_questions} questions, k={rep.k}")
    if cf and cf.get("headroom_ci"):
        captured = (rep.router or {}).get("headroom_captured")
        extra = f"; trained router captures {captured:.0%}" if captured is not None else ""
        _diff_panel(
            ax2,
            ["headroom"],
            [cf["headroom_ci"]],
            f"headroom = cross-fit oracle − best single → {rep.verdict}{extra}",
            bands=[(0.02, "0.02 (pool-bound limit)")],
        )
    else:
        ax2.axis("off")
        ax2.text(0.0, 0.5, f"headroom: not estimable ({rep.verdict_reason})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_baselines(rep: BaselineReport, path: str | Path) -> Path:
    path = check_plot_path(path)
    plt = pyplot()
    labels = [s.name for s in rep.always] + [f"random routing ({rep.random_seeds} seeds)"]
    cis = [s.accuracy for s in rep.always] + [rep.random]
    colors = [BEST if s.name == f"always {rep.best_single}" else SINGLE for s in rep.always] + [RANDOM]
    fig, ax = plt.subplots(figsize=(8.5, 1.6 + 0.5 * len(labels)))
    _bars(ax, labels, cis, colors, f"Baselines — {rep.benchmark}, {rep.mode}, {rep.n_questions} questions")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_eval(rep: EvalReport, path: str | Path) -> Path:
    path = check_plot_path(path)
    plt = pyplot()
    labels = ["trained router"] + [s.name for s in rep.singles] + [f"random routing ({rep.random_seeds} seeds)"]
    cis = [rep.router.accuracy] + [s.accuracy for s in rep.singles] + [rep.random]
    colors = [ROUTER] + [BEST if s.name == f"always {rep.best_single}" else SINGLE for s in rep.singles] + [RANDOM]
    fig, (ax1, ax2) = plt.subplots(
        2,
        1,
        figsize=(8.5, 2.6 + 0.5 * (len(labels) + len(rep.comparisons))),
        gridspec_kw={"height_ratios": [len(labels), len(rep.comparisons) + 0.6]},
    )
    _bars(ax1, labels, cis, colors, f"Evaluation — {rep.split} split, {rep.mode}, {rep.n_questions} questions")
    _diff_panel(
        ax2,
        [f"router − {c.baseline.removeprefix('always ')}" for c in rep.comparisons],
        [c.diff for c in rep.comparisons],
        "router − baseline, paired 95% CI (green: better, red: worse, grey: within noise)",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
