"""Fitness curves (best / mean / max per generation, σ on the right axis) via textual-plotext.

With 10,000 generations of history, plotting every point would cost more than a frame; the
series are reduced to at most `MAX_POINTS` (per-bucket max for best/max, mean for mean and σ),
which is all a terminal can show anyway.
"""

from __future__ import annotations

import numpy as np
from textual_plotext import PlotextPlot

from minertui.runmodel import Generations

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


class FitnessPlot(CachedPlot):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._key: tuple | None = None
        self._gens: Generations | None = None

    def set_data(self, gens: Generations, key: tuple) -> None:
        if key == self._key:
            return
        self._key, self._gens = key, gens
        self._draw()
        self.data_changed(key)

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        g = self._gens
        plt.xlabel("generation")
        if g is None or len(g) == 0:
            plt.title("fitness — waiting for the first generation")
            return
        x, (best, mean, mx, sigma) = reduce(
            g.gen, [g.best, g.mean, g.max, g.sigma], ["max", "mean", "max", "mean"])
        lo, hi = int(x[0]), int(x[-1])
        plt.xticks(sorted(set(np.linspace(lo, hi, min(6, hi - lo + 1)).round().astype(int).tolist())))
        x = x.tolist()
        plt.title("fitness per generation")
        plt.plot(x, mx.tolist(), label="max", marker="braille", color="green")
        plt.plot(x, best.tolist(), label="best so far", marker="braille", color="cyan")
        plt.plot(x, mean.tolist(), label="mean", marker="braille", color="yellow")
        if np.isfinite(sigma).any():
            plt.plot(x, sigma.tolist(), label="σ", marker="braille", color="magenta", yside="right")
