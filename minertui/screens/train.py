"""Train mode: live curves, progress of the generation and of the run, throughput, spend,
routing mix of the last generation, validation accuracy, the status/log tail."""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from minertui.reader import Poll
from minertui.runmodel import RunSnapshot, model_letter
from minertui.screens.common import EngineActions, ModeScreen
from minertui.widgets.curves import FitnessPlot
from minertui.widgets.format import bar, fmt_duration, num, usd, utc

LOG_STYLE = {"error": "red", "warning": "yellow", "status": "bold"}


def stats_text(s: RunSnapshot) -> Text:
    """Six lines (fits 80×24): best, last generation, σ and throughput, spend, validation, ETA."""
    t = Text()
    total = s.generations_total
    t.append("best     ", style="dim")
    t.append(num(s.best), style="bold")
    t.append(f"  gen {s.generations_done}" + (f"/{total}" if total else "") + "\n")
    t.append("last     ", style="dim")
    if len(s.gens):
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
        t.append(f" / {usd(budget, 2)} {frac:.0%}", style="bold red" if frac > 0.9 else "")
    else:
        t.append(" (no budget)", style="dim")
    t.append("\n")
    val = s.gens.val_acc[~_isnan(s.gens.val_acc)] if len(s.gens) else []
    t.append("val acc  ", style="dim")
    t.append(num(float(val[-1])) if len(val) else "—")
    warm = s.meta.get("warm_start") if isinstance(s.meta.get("warm_start"), dict) else None
    if warm and isinstance(warm.get("val_acc"), (int, float)):  # generation 0: the label warm start
        t.append(f"  gen 0 warm {num(float(warm['val_acc']))}", style="dim")
    t.append("\n")
    t.append("ETA      ", style="dim")
    t.append(fmt_duration(s.eta_secs) if s.eta_secs is not None else "—")
    return t


def _isnan(a):
    import numpy as np
    return np.isnan(a)


def mix_text(s: RunSnapshot, width: int = 10) -> Text:
    t = Text()
    last = int(s.gens.gen[-1]) if len(s.gens) else None
    pool = list(s.meta.get("models") or [])
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
        t.append(f" · ETA {fmt_duration(s.eta_secs)}")
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
    ]

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="train-top"):
            yield FitnessPlot(id="train-plot")
            with Vertical(id="train-side"):
                yield Static(id="train-stats")
                yield Static(id="train-mix")
        yield Static(id="train-progress")
        yield Static(id="train-log")

    def update_body(self, poll: Poll) -> None:
        s = poll.current
        if s is None:
            self.query_one("#train-stats", Static).update(
                Text("No run selected: open one in Runs (1) or start one (n there).", style="dim"))
            return
        key = (str(s.path), s.version, self.size)
        if key == getattr(self, "_key", None):
            return
        self._key = key
        self.query_one(FitnessPlot).set_data(s.gens, (str(s.path), len(s.gens)))
        self.query_one("#train-stats", Static).update(stats_text(s))
        self.query_one("#train-mix", Static).update(mix_text(s))
        width = max(10, min(40, self.size.width - 50))
        self.query_one("#train-progress", Static).update(progress_text(s, width))
        log = self.query_one("#train-log", Static)
        log.update(log_text(s, max(1, log.size.height or 4)))

    def engine_target(self):
        s = self.app.current
        if s is None:
            self.notify("no run selected", severity="warning")
            return None
        return s.path
