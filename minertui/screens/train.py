"""Train mode: live curves, progress of the generation and of the run, throughput, spend,
routing mix of the last generation, validation accuracy, the status/log tail."""

from __future__ import annotations

import math

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from minertui.accuracy import acc_cost, pareto_front
from minertui.messages import BaselinePinned
from minertui.reader import Poll
from minertui.runmodel import RunSnapshot, model_letter
from minertui.screens.common import EngineActions, ModeScreen
from minertui.settings import load_settings, save_settings
from minertui.widgets.curves import (
    RICH_COLOUR,
    RUN_COLOURS,
    AccCostPlot,
    CostCurve,
    FitnessPlot,
    Series,
    SmallPlot,
    View,
    legend_text,
)
from minertui.widgets.format import bar, duration, money, num, usd, utc
from minertui.widgets.system import system_text

LOG_STYLE = {"error": "red", "warning": "yellow", "status": "bold"}


def stats_text(s: RunSnapshot, baseline: tuple[str, float] | None = None) -> Text:
    """Six lines (fits 80×24): best, last generation, σ and throughput, spend, validation, ETA."""
    t = Text()
    total = s.generations_total
    t.append("best     ", style="dim")
    t.append(num(s.best), style="bold")
    t.append(f"  gen {s.generations_done}" + (f"/{total}" if total else "") + "\n")
    t.append("last     ", style="dim")
    if len(s.gens):
        if math.isfinite(float(s.gens.competition_score[-1])):
            # --objective competition: the fitness is the competition's own score (pr_eval / pass rate)
            t.append(f"score {num(float(s.gens.competition_score[-1]))} mean {num(float(s.gens.mean[-1]))}")
        else:
            t.append(f"max {num(float(s.gens.max[-1]))} mean {num(float(s.gens.mean[-1]))}")
        turns, cpc = float(s.gens.avg_turns[-1]), float(s.gens.cost_per_correct[-1])
        if math.isfinite(turns):  # live mode (NaN otherwise): turns per session, USD per right answer
            t.append(f" turns {turns:.1f}" + (f" {usd(cpc, 6)}/ok" if math.isfinite(cpc) else ""))
        t.append("\n")
    else:
        t.append("—\n")
    eps = s.evals_per_sec
    t.append("σ ", style="dim")
    t.append(num(float(s.gens.sigma[-1]), ".3g") if len(s.gens) else "—")
    t.append("  evals/s ", style="dim")
    t.append((num(eps, ",.1f") if eps is not None else "—") + "\n")
    t.append("spend    ", style="dim")
    budget = s.budget_usd
    t.append(usd(s.spend_usd))
    if budget:
        frac = s.spend_usd / budget if budget > 0 else 1.0
        t.append(f" / {money(budget)} {frac:.0%}", style="bold red" if frac > 0.9 else "")
    else:
        t.append(" (no budget)", style="dim")
    t.append("\n")
    val = s.gens.val_acc[~_isnan(s.gens.val_acc)] if len(s.gens) else []
    t.append("val acc  ", style="dim")
    t.append(num(float(val[-1])) if len(val) else "—")
    warm = s.record.warm_start if s.record else None  # what the warm start fitted
    if warm is not None and warm.val_acc is not None:  # generation 0: the label warm start
        t.append(f" · warm {num(warm.val_acc)}", style="dim")  # generation 0's; fits 80 columns
    t.append("\n")
    t.append("ETA      ", style="dim")
    eta = s.eta
    t.append(duration(eta.secs) if eta is not None else "—")
    if eta is not None:
        t.append(
            " budget-bound" if eta.limit == "budget" else f" · {eta.generations:.0f} gen left",
            style="bold yellow" if eta.limit == "budget" else "dim",
        )
    if baseline is not None and s.best is not None:
        t.append("\nvs base  ", style="dim")
        d = s.best - baseline[1]
        t.append(f"{d:+.3f}", style="green" if d > 0 else "red" if d < 0 else "")
        t.append(f" ({baseline[0][:18]})", style="dim")
    return t


def _isnan(a):
    return np.isnan(a)


def mix_text(s: RunSnapshot, width: int = 10) -> Text:
    t = Text()
    last = int(s.gens.gen[-1]) if len(s.gens) else None
    pool = s.models
    t.append(f"routing mix, gen {last if last is not None else '—'}\n", style="bold")
    for title, mix in (("model", s.model_mix), ("role", s.role_mix)):
        total = sum(mix.values())
        if not total:
            t.append(f"{title}: no data\n", style="dim")
            continue
        t.append(f"{title}\n", style="dim")
        for name, n in sorted(mix.items(), key=lambda kv: -kv[1]):
            label = f"{model_letter(pool.index(name))} {name.split('/')[-1]}" if name in pool else name
            t.append(f"{label[:14]:<14} {bar(n / total, width)} {n / total:4.0%}\n")
    return t


def progress_text(s: RunSnapshot, width: int = 30) -> Text:
    t = Text()
    p = s.in_progress
    if p is not None and s.status in ("running", "created"):
        t.append(f"gen {p.gen:<5} ", style="dim")
        t.append(bar(p.done / p.total, width), style="cyan")
        t.append(f" {p.done:,}/{p.total:,} candidate×question\n")
    else:
        t.append("gen   —     " + bar(0, width) + " (between generations)\n", style="dim")
    total = s.generations_total
    done = s.generations_done
    t.append("run         ", style="dim")
    t.append(bar(done / total if total else 0, width), style="green")
    t.append(f" {done}/{total if total else '?'} generations")
    if s.eta_secs is not None:
        t.append(f" · ETA {duration(s.eta_secs)}")
    return t


def log_text(s: RunSnapshot, lines: int) -> Text:
    # one event a line, cut at the edge: a long first message must not push the newest out of view
    t = Text(no_wrap=True, overflow="ellipsis")
    for line in s.logs[-lines:]:
        t.append(utc(line.time, "%H:%M:%S") + " ", style="dim")
        t.append(line.message.splitlines()[0] if line.message else "", style=LOG_STYLE.get(line.level, ""))
        t.append("\n")
    if not s.logs:
        t.append("no status or log events yet", style="dim")
    return t


class TrainScreen(EngineActions, ModeScreen):
    MODE = "Train"
    CSS_PATH = "train.tcss"
    BINDINGS = [
        Binding("p", "pause", "Pause", id="train.pause"),
        Binding("s", "stop", "Stop", id="train.stop"),
        Binding("r", "resume", "Resume", id="train.resume"),
        Binding("c", "compare", "Compare", id="train.compare"),
        Binding("plus,equals_sign", "smooth(0.1)", "Smooth+", id="train.smooth_more"),
        Binding("minus", "smooth(-0.1)", "Smooth-", id="train.smooth_less"),
        Binding("z", "zoom(0.5)", "Zoom in", id="train.zoom_in"),
        Binding("Z", "zoom(2)", "Zoom out", show=False, id="train.zoom_out"),
        Binding("left_square_bracket", "pan(-0.25)", "Pan left", show=False, id="train.pan_left"),
        Binding("right_square_bracket", "pan(0.25)", "Pan right", show=False, id="train.pan_right"),
        Binding("0", "reset_view", "Reset view", show=False, id="train.reset_view"),
        Binding("f", "fixed01", "Axis 0–1", show=False, id="train.fixed01"),
        Binding("v", "metric", "Val/best", show=False, id="train.metric"),
        Binding("l", "log", "Full log", show=False, id="train.log"),
        Binding("B", "baseline_score", "Baseline score", show=False, id="train.baseline_score"),
        Binding("y", "system", "System", id="train.system"),
        Binding("a", "acc_cost", "Acc/$", id="train.acc_cost"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.view = View()
        self.comparing = True  # overlay the runs marked in Runs, when there are any
        self.metric = "best"  # what the overlay compares: best fitness or validation accuracy
        self._colours: dict[str, str] = {}
        self._sweeps: tuple = ()
        self._metric_asked: tuple[int, str] | None = None
        self._key: tuple | None = None  # what the screen shows (redrawn when it changes)
        self.system = False  # the side pane shows this box's GPUs, CPU, RAM, disk (y)
        self.acc_cost = False  # the main chart: validation accuracy against spend (a)
        self._acc_cache: dict[tuple[str, int], object] = {}  # (run id, version) -> AccCost

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="train-top"):
            with Vertical(id="train-main"):
                yield FitnessPlot(id="train-plot")
                yield AccCostPlot(id="train-acc-cost", classes="hidden")
                yield Static(id="train-legend")
                with Horizontal(id="train-small"):
                    yield SmallPlot(id="train-sigma")
                    yield SmallPlot(id="train-spend")
            with VerticalScroll(id="train-side"):
                yield Static(id="train-stats")
                yield Static(id="train-mix")
        yield Static(id="train-progress")
        yield Static(id="train-log")

    def on_mount(self) -> None:
        self.view = View(smoothing=float(getattr(self.app, "smoothing", 0.6)))

        if load_settings().system_pane is True:  # remembered from the last session
            self.system = True
            self.app.reader.want_system = True
        super().on_mount()

    def _compared(self, poll: Poll) -> list[RunSnapshot]:
        paths = list(getattr(self.app, "compare", ()) or ())
        by_path = {s.path.resolve(): s for s in poll.runs}
        return [by_path[p.resolve()] for p in paths if p.resolve() in by_path]

    def _colour(self, run_id: str, live: set[str]) -> str:
        c = self._colours.get(run_id)
        if c is None:
            used = {self._colours[r] for r in live if r in self._colours}
            c = next((x for x in RUN_COLOURS if x not in used), RUN_COLOURS[len(self._colours) % len(RUN_COLOURS)])
            self._colours[run_id] = c
        return c

    def update_body(self, poll: Poll) -> None:
        s = poll.current
        if s is None:
            self.query_one("#train-stats", Static).update(
                Text("No run selected: open one in Runs (1) or start one (n there).", style="dim")
            )
            return
        compared = self._compared(poll) if self.comparing else []
        wanted = getattr(self.app, "compare_metric", None)  # a sweep's overlay: validation accuracy
        if wanted is not None and wanted != self._metric_asked:
            self._metric_asked, self.metric = wanted, wanted[1]
        self._sweeps = poll.sweeps
        base = self._baseline(poll)
        key = (
            str(s.path),
            s.version,
            self.size,
            self.view,
            self.metric,
            tuple((c.id, c.version) for c in compared),
            base,
            self.system and (poll.system[-1]["time"] if poll.system else 0.0),
            self.acc_cost,
        )
        if key == self._key:
            return
        self._key = key
        self._draw_curves(s, compared, base)
        self.query_one("#train-stats", Static).update(stats_text(s, base))
        if self.system:
            side = self.query_one("#train-side")
            self.query_one("#train-mix", Static).update(system_text(poll.system, s, side.size.width or 34))
        else:
            self.query_one("#train-mix", Static).update(mix_text(s))
        width = max(10, min(40, self.size.width - 50))
        self.query_one("#train-progress", Static).update(progress_text(s, width))
        log = self.query_one("#train-log", Static)
        log.update(log_text(s, max(1, log.size.height or 4)))
        self.refresh_bindings()

    def _baseline(self, poll: Poll) -> tuple[str, float] | None:
        path = getattr(self.app, "baseline", None)
        if path is None:
            return None
        if isinstance(path, float):  # a number the miner gave (the king's score)
            return ("score", path)
        b = next((r for r in poll.runs if r.path.resolve() == path.resolve()), None)
        if b is None:
            return None
        y = b.gens.val_acc if self.metric == "val" else b.gens.best
        v = float(_nanmax(y)) if len(y) and _isfinite(y).any() else None
        return (b.id, v) if v is not None else None

    def _acc(self, s: RunSnapshot):
        key = (str(s.path), s.version)
        got = self._acc_cache.get(key)
        if got is None:
            if len(self._acc_cache) > 64:
                self._acc_cache.clear()
            got = self._acc_cache[key] = acc_cost(s)
        return got

    def _draw_acc_cost(self, s: RunSnapshot, compared: list[RunSnapshot]) -> None:
        """Validation accuracy against cumulative spend, 95% bootstrap intervals; across the
        compared runs, the Pareto front (the most accurate for the money) marked."""
        runs = compared or [s]
        live = {c.id for c in runs}
        data = [self._acc(r) for r in runs]
        curves = [
            CostCurve(d.run_id, d.spend, d.acc, d.lo, d.hi, "cyan" if not compared else self._colour(d.run_id, live))
            for d in data
        ]
        # each run is one point: its best validation accuracy and what it had spent to reach it
        points = [
            (float(d.spend[i]), float(d.acc[i]), d.run_id) for d in data if len(d) for i in [int(np.argmax(d.acc))]
        ]
        front = [points[i] for i in pareto_front([(p[0], p[1]) for p in points])] if len(runs) > 1 else []
        n = {d.n_val for d in data}
        bands = len(runs) <= 2
        sources = {d.source for d in data if len(d)}
        what = (
            "training-session accuracy vs $ (no validation split scored)"
            if sources == {"training"}
            else "accuracy vs $ (validation; graded training sessions where none)"
            if len(sources) > 1
            else "validation accuracy vs $"
        )
        title = what + (f" · {len(runs)} runs compared" if len(runs) > 1 else "")
        key = (tuple((r.id, r.version) for r in runs), bands)
        self.query_one(AccCostPlot).set_curves(curves, key, title, [(p[0], p[1]) for p in front], bands)
        t = Text(no_wrap=True, overflow="ellipsis")
        for c in curves:
            t.append("━", style=RICH_COLOUR.get(c.colour, c.colour))
            t.append(c.label + " ")
        if bands:
            t.append(f"grey 95% CI n={'/'.join(str(x) for x in sorted(n)) or '?'}", style="dim")
        if front:
            t.append(" ● Pareto: " + ", ".join(f"{p[2]} {p[1]:.3f}@{money(p[0])}" for p in front), style="bold")
        if data and all(not len(d) for d in data):
            t.append(" no validated generation yet", style="dim")
        elif all(float(d.spend.max(initial=0.0)) == 0.0 for d in data):
            t.append(" · $0 spent: a cached run pays nothing (live runs have a spend axis)", style="yellow")
        self.query_one("#train-legend", Static).update(t)

    def _draw_curves(self, s: RunSnapshot, compared: list[RunSnapshot], base) -> None:
        g = s.gens
        self.query_one(FitnessPlot).set_class(self.acc_cost, "hidden")
        self.query_one(AccCostPlot).set_class(not self.acc_cost, "hidden")
        if self.acc_cost:
            self._draw_acc_cost(s, compared)
            self._draw_small(s)
            return
        plot = self.query_one(FitnessPlot)
        key: tuple
        if compared:
            live = {c.id for c in compared}
            # a sweep's trial keeps its colour (by its place in the sweep) however it is sorted
            trial = {t.path: t.index for sw in self._sweeps for t in sw.trials}
            series = [
                Series(
                    c.id,
                    c.gens.gen,
                    c.gens.val_acc if self.metric == "val" else c.gens.best,
                    RUN_COLOURS[trial[c.path] % len(RUN_COLOURS)] if c.path in trial else self._colour(c.id, live),
                )
                for c in compared
            ]
            title = f"compare: {'validation accuracy' if self.metric == 'val' else 'best fitness'}"
            key = (self.metric, *((c.id, c.version) for c in compared))
        elif self.metric == "val":  # v on a single run: its validation curve alone
            series = [Series("val", g.gen, g.val_acc, "magenta")]
            title = "validation accuracy per generation"
            key = (str(s.path), len(g), "val")
        else:
            series = [
                Series("max", g.gen, g.max, "green"),
                Series("best", g.gen, g.best, "cyan"),
                Series("mean", g.gen, g.mean, "yellow", how="mean"),
            ]
            if len(g) and _isfinite(g.val_acc).any():  # the validation curve, not only its number
                series.append(Series("val", g.gen, g.val_acc, "magenta"))
            title = "fitness per generation"
            key = (str(s.path), len(g))
        plot.set_series(series, self.view, key, title, base[1] if base else None)
        self.query_one("#train-legend", Static).update(
            legend_text(
                series,
                self.view,
                f"{base[0]} {base[1]:.3f}" if base else None,
                self.query_one("#train-legend").size.width or None,
            )
        )
        self._draw_small(s)

    def _draw_small(self, s: RunSnapshot) -> None:
        g = s.gens
        self.query_one("#train-sigma", SmallPlot).set_series(
            g.gen, g.sigma, self.view, (str(s.path), len(g)), "σ", "magenta"
        )
        self.query_one("#train-spend", SmallPlot).set_series(
            g.gen, g.cost_usd, self.view, (str(s.path), len(g)), "spend $", "red"
        )

    def engine_target(self):
        s = self.app.current
        if s is None:
            self.notify("no run selected", severity="warning")
            return None
        return s.path

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        s = getattr(self.app, "current", None)
        if s is not None:
            if action in ("pause", "stop"):
                return s.locked  # a finished or stopped run has nothing to pause
            if action == "resume":
                return not s.locked and s.status != "finished"
        if action == "compare":
            return bool(getattr(self.app, "compare", ()))
        return True

    # ---- view ----------------------------------------------------------------------------
    def _redraw(self) -> None:
        self._key = None
        if self.app.latest is not None:
            self.show(self.app.latest)

    def action_smooth(self, delta: float) -> None:
        sm = round(min(0.95, max(0.0, self.view.smoothing + delta)), 2)
        self.view = View(sm, self.view.window, self.view.fixed01)
        self.app.smoothing = sm

        save_settings(smoothing=sm)
        self.notify(f"smoothing (EMA) {sm:.2f}" + (" (raw)" if sm == 0 else ""), timeout=2)
        self._redraw()

    def action_zoom(self, factor: float) -> None:
        self.view = self.view.zoom(factor)
        self._redraw()

    def action_pan(self, delta: float) -> None:
        self.view = self.view.pan(delta)
        self._redraw()

    def action_reset_view(self) -> None:
        self.view = View(self.view.smoothing)
        self._redraw()

    def action_fixed01(self) -> None:
        self.view = View(self.view.smoothing, self.view.window, not self.view.fixed01)
        self._redraw()

    def action_metric(self) -> None:
        self.metric = "val" if self.metric == "best" else "best"
        self._redraw()

    def action_acc_cost(self) -> None:
        self.acc_cost = not self.acc_cost
        self._redraw()

    def action_system(self) -> None:
        self.system = not self.system
        self.app.reader.want_system = self.system
        save_settings(system_pane=self.system)
        self._redraw()
        self.app.poll_soon()

    def action_compare(self) -> None:
        self.comparing = not self.comparing
        self.notify("overlay of the marked runs" if self.comparing else "this run's curves", timeout=2)
        self._redraw()

    def action_baseline_score(self) -> None:
        """Pin a number as the baseline (the king's bundle score); a run pinned in Runs (b) is
        the other kind of baseline."""
        from minertui.screens.runops import ScoreScreen  # lazy: attrs kept off the app's first frame

        def pin(value: float | None) -> None:
            self.app.post_message(BaselinePinned(value))
            self.notify(f"baseline score {value:.3f}" if value is not None else "baseline unpinned", timeout=3)
            self.call_after_refresh(self._redraw)

        self.app.push_screen(ScoreScreen(), pin)

    def action_log(self) -> None:
        s = self.app.current
        if s is None:
            return
        from minertui.screens.runops import LogScreen  # lazy: attrs kept off the app's first frame

        text = "\n".join(f"{utc(l.time, '%Y-%m-%d %H:%M:%S')} [{l.level}] {l.message}" for l in s.logs)
        self.app.push_screen(
            LogScreen(None, f"events — {s.id} (last {len(s.logs)})", text=text or "no status or log events yet")
        )


def _nanmax(a):
    return np.nanmax(a)


def _isfinite(a):
    return np.isfinite(a)
