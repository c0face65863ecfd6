"""Curves via textual-plotext: fitness (best / mean / max, or several runs' best overlaid), EMA
smoothing with the raw series faint, zoom/pan on the generation axis, an optional fixed 0–1 axis,
the legend as text outside the plot; σ and spend in their own small panels.

With 10,000 generations of history, plotting every point would cost more than a frame; the
series are reduced to at most `MAX_POINTS` (per-bucket max for best/max, mean for mean and σ),
which is all a terminal can show anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual_plotext import PlotextPlot

MAX_POINTS = 240


def reduce(x: np.ndarray, ys: list[np.ndarray], hows: list[str], n: int = MAX_POINTS):
    """Bucket the series into ≤ n points. x: (G,), each y: (G,) -> (≤n,) arrays."""
    if len(x) <= n:
        return x, ys
    edges = np.linspace(0, len(x), n + 1).astype(int)
    starts = edges[:-1]
    out = []
    for y, how in zip(ys, hows):
        f = np.fmax.reduceat if how == "max" else np.add.reduceat
        r = f(np.nan_to_num(y, nan=-np.inf if how == "max" else 0.0), starts)
        if how != "max":
            r = r / np.diff(edges)
        out.append(r)
    return x[edges[1:] - 1], out


class CachedPlot(PlotextPlot):
    """A plotext plot that rebuilds its picture only when its data, size or theme changed
    (plotext's build is the most expensive step of a refresh: tens of ms)."""

    _data_key: object = None

    def render(self):
        key = (self._data_key, self.size, self.app.theme)
        if key != getattr(self, "_rendered_key", None):
            self._rendered = super().render()
            self._rendered_key = key
        return self._rendered

    def data_changed(self, key: object) -> None:
        self._data_key = key
        self.refresh()


# stable colours per compared run: the i-th marked run keeps its colour while others come and go
RUN_COLOURS = ("cyan", "orange", "green", "magenta", "yellow", "blue", "red", "white")  # plotext names
RICH_COLOUR = {"orange": "dark_orange", "gray": "grey50"}  # the same colours by Rich's names (legend)


@dataclass(frozen=True)
class View:
    """How the curves are drawn: EMA smoothing (0 = raw), the generation window (zoom/pan), a
    fixed 0–1 y axis."""

    smoothing: float = 0.6
    window: tuple[float, float] = (0.0, 1.0)  # fractions of the generation axis
    fixed01: bool = False

    def zoom(self, factor: float) -> View:
        lo, hi = self.window
        mid, half = (lo + hi) / 2, max(0.01, (hi - lo) * factor / 2)
        lo, hi = max(0.0, mid - half), min(1.0, mid + half)
        return View(self.smoothing, (lo, hi), self.fixed01)

    def pan(self, delta: float) -> View:
        lo, hi = self.window
        span = hi - lo
        lo = min(max(0.0, lo + delta * span), 1.0 - span)
        return View(self.smoothing, (lo, lo + span), self.fixed01)


def window_slice(n: int, window: tuple[float, float]) -> slice:
    lo, hi = window
    a = int(np.floor(lo * n))
    b = max(a + 1, int(np.ceil(hi * n)))
    return slice(a, min(n, b))


@dataclass(frozen=True)
class Series:
    label: str
    x: np.ndarray
    y: np.ndarray
    colour: str
    how: str = "max"  # bucket reduction


def draw_lines(plt, series: list[Series], view: View, title: str, baseline: float | None = None) -> None:
    """Each series raw (faint) and EMA-smoothed, in the view's window, ≤ MAX_POINTS a line."""
    from minertui.runmodel import ema  # lazy: pydantic + PyYAML kept off the app's first frame

    plt.clear_data()
    plt.clear_figure()
    plt.title(title)
    plt.xlabel("generation")
    xs_all = []
    for s in series:
        if not len(s.x):
            continue
        sl = window_slice(len(s.x), view.window)
        x, y = s.x[sl], s.y[sl]
        smooth = ema(y, view.smoothing) if view.smoothing > 0 else None
        ys, hows = ([y, smooth], [s.how, "mean"]) if smooth is not None else ([y], [s.how])
        rx, rys = reduce(x, ys, hows)
        ok = np.isfinite(rys[0])
        if not ok.any():
            continue
        xs_all.append(rx)
        if smooth is not None:
            plt.plot(rx[ok].tolist(), rys[0][ok].tolist(), marker="braille", color="gray")  # raw, faint
            ok2 = np.isfinite(rys[1])
            plt.plot(rx[ok2].tolist(), rys[1][ok2].tolist(), marker="braille", color=s.colour)
        else:
            plt.plot(rx[ok].tolist(), rys[0][ok].tolist(), marker="braille", color=s.colour)
    if baseline is not None and xs_all:
        lo = min(float(x[0]) for x in xs_all)
        hi = max(float(x[-1]) for x in xs_all)
        plt.plot([lo, hi], [baseline, baseline], marker="dot", color="white")
    if xs_all:
        lo = int(min(float(x[0]) for x in xs_all))
        hi = int(max(float(x[-1]) for x in xs_all))
        plt.xticks(sorted(set(np.linspace(lo, hi, min(6, hi - lo + 1)).round().astype(int).tolist())))
    if view.fixed01:
        plt.ylim(0, 1)


def legend_text(series: list[Series], view: View, baseline_label: str | None = None, width: int | None = None):
    """The legend as a line of text under the plot (never over the data). With `width`, long
    labels (compared runs' ids) are shortened in the middle so that every run keeps its entry."""
    from minertui.widgets.runbar import shorten_middle  # lazy: PyYAML kept off the app's first frame

    labels = [s.label for s in series]
    tight = bool(width and series and sum(len(x) + 2 for x in labels) > width - 18)
    if tight and width:  # the runs' names come first: the smoothing note gives way
        each = max(6, width // len(series) - 2)
        labels = [shorten_middle(x, each) for x in labels]
    t = Text(no_wrap=True, overflow="ellipsis")
    for s, label in zip(series, labels):
        t.append("━", style=RICH_COLOUR.get(s.colour, s.colour))
        t.append(label + " ")
    if view.smoothing > 0 and not tight:
        t.append(f"EMA {view.smoothing:.2f}, raw grey", style="dim")
    if baseline_label:
        t.append(f"  ┈ baseline {baseline_label}", style="dim")
    lo, hi = view.window
    if (lo, hi) != (0.0, 1.0):
        t.append(f"  zoom {lo:.0%}–{hi:.0%}", style="dim")
    if view.fixed01:
        t.append("  y 0–1", style="dim")
    return t


class FitnessPlot(CachedPlot):
    """The main curves: one run's best/mean/max, or several runs' best overlaid (compare)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._key: tuple | None = None

    def set_series(
        self, series: list[Series], view: View, key: tuple, title: str, baseline: float | None = None
    ) -> None:
        full = (key, view, baseline)
        if full == self._key:
            return
        self._key = full
        if not series or not any(len(s.x) for s in series):
            self.plt.clear_data()
            self.plt.clear_figure()
            self.plt.title("fitness — waiting for the first generation")
        else:
            draw_lines(self.plt, series, view, title, baseline)
        self.data_changed(full)


class SmallPlot(CachedPlot):
    """σ or spend: its own small panel, its own axis (a 6% drift of σ stays a 6% drift)."""

    def set_series(self, x: np.ndarray, y: np.ndarray, view: View, key: tuple, title: str, colour: str) -> None:
        full = (key, view.window)
        if full == getattr(self, "_key", None):
            return
        self._key = full
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        if len(x):
            sl = window_slice(len(x), view.window)
            rx, (ry,) = reduce(x[sl], [y[sl]], ["mean"])
            ok = np.isfinite(ry)
            if ok.any():
                plt.plot(rx[ok].tolist(), ry[ok].tolist(), marker="braille", color=colour)
                lo, hi = float(np.nanmin(ry)), float(np.nanmax(ry))
                # from 0 (these are ≥ 0): a 6% drift of σ looks like 6%, not like a mountain
                top = hi * 1.15 if hi > 0 else 1.0
                plt.ylim(min(0.0, lo), top)
                plt.yticks([0.0, hi], ["0", f"{hi:.3g}"])
                plt.xticks([])
        self.data_changed(full)


@dataclass(frozen=True)
class CostCurve:
    """One run's validation accuracy against its cumulative spend, with its interval."""

    label: str
    spend: np.ndarray
    acc: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    colour: str


def draw_acc_cost(plt, curves: list[CostCurve], title: str, front: list[tuple[float, float]], bands: bool) -> None:
    """Accuracy (y) against spend in USD (x); the bootstrap interval as grey lines when `bands`;
    the Pareto front's points marked."""
    plt.clear_data()
    plt.clear_figure()
    plt.title(title)
    plt.xlabel("spend $ (cumulative)")
    for c in curves:
        if not len(c.acc):
            continue
        x = c.spend.tolist()
        if bands and np.isfinite(c.lo).all():
            plt.plot(x, c.lo.tolist(), marker="braille", color="gray")
            plt.plot(x, c.hi.tolist(), marker="braille", color="gray")
        plt.plot(x, c.acc.tolist(), marker="braille", color=c.colour)
    if front:
        plt.scatter([p[0] for p in front], [p[1] for p in front], marker="●", color="white")


class AccCostPlot(CachedPlot):
    """Train's `a` chart: accuracy against money for the run, or the compared runs."""

    def set_curves(self, curves: list[CostCurve], key: tuple, title: str, front, bands: bool) -> None:
        if key == getattr(self, "_key", None):
            return
        self._key = key
        if not any(len(c.acc) for c in curves):
            self.plt.clear_data()
            self.plt.clear_figure()
            self.plt.title("accuracy vs $ — no validated generation with a spend yet")
        else:
            draw_acc_cost(self.plt, curves, title, front, bands)
        self.data_changed(key)
