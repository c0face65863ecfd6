"""The drill-down of one trajectory: the question, each turn (model, role, both probability
vectors as small bars, the output with highlighted code, the verdict), the graded answer vs gold.
The trace is read from its byte offset in traces.jsonl as its record
(`trinity.runs.records.TraceRecord`); the question from the run's questions
file (run.json config), loaded once per file."""

from __future__ import annotations

import io
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from minertui.runmodel import RunSnapshot, model_letter
from minertui.widgets.format import bar, usd
from minertui.widgets.keybar import KeyBar
from trinity.grading import describe_gold
from trinity.io import read_line_at
from trinity.model import ROLES
from trinity.runs.records import RecordError, RunMeta, TraceRecord, TraceTurn, parse_trace


def answer_text(value) -> str:
    """An answer or gold as the miner would write it: a string as is (9\\pi, not its JSON form),
    anything else (a code task's tests) as JSON; cut at 400 characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:400]


def gold_text(kind, gold) -> str:
    """The gold by its kind (BBH target, IFEval instructions, BFCL call …), cut at 400 characters."""
    return describe_gold(kind, gold)[:400]


@lru_cache(maxsize=4)
def _questions(path: str) -> dict[str, Any]:
    from trinity.data.questions import load_questions  # lazy: PyYAML loaded only when used

    return {q.id: q for q in load_questions(path)}


def question_for(record: RunMeta | None, qid: str) -> tuple[str | None, str]:
    """(question text or None, where it came from / why it is missing)."""
    src = record.config.questions if record else None  # the engine's resolved config
    if not src:
        return None, "the run's config names no questions file"
    shown = src
    if src == "practice":
        from trinity.benchmarks.practice import QUESTIONS_FILE  # lazy: PyYAML loaded only when used

        src, shown = str(QUESTIONS_FILE), "the shipped practice set"
    if not Path(src).is_file():
        return None, f"questions file {src} not found on this machine"
    try:
        q = _questions(src).get(qid)
    except Exception as e:  # a broken file: say so, keep the rest of the drill-down
        return None, f"questions file {src} could not be read: {e}"
    return (q.question, src) if q is not None else (None, f"{qid} is not in {shown}")


def prob_bars(probs: list[float] | None, labels: list[str], chosen: str | None) -> Text:
    if not probs:
        return Text("(no probabilities recorded)", style="dim")
    t = Text()
    for i, p in enumerate(probs):
        label = labels[i] if i < len(labels) else str(i)
        style = "bold cyan" if label == chosen else ""
        t.append(f"  {label[:22]:<22} {bar(p, 12)} {p:5.1%}\n", style=style)
    return t


def _given(rec: TraceRecord | TraceTurn, name: str, value: float) -> float | None:
    """A cost the trace recorded (None: it recorded none, shown as a dash, not as $0)."""
    return value if name in rec.model_fields_set else None


def read_trace(path: Path, offset: int) -> TraceRecord:
    """The trace at byte `offset` of traces.jsonl, as its record; OSError / ValueError when the
    line cannot be read or is not a trace (a RecordError naming the field is a ValueError too)."""
    data = read_line_at(path, offset)
    try:
        return parse_trace(data, f"{path} at byte {offset}")
    except RecordError as e:
        raise ValueError(str(e)) from None


def render_trace(tr: TraceRecord, record: RunMeta | None) -> list[Any]:
    """The trace `tr` as Rich renderables; `record`: the run's run.json (its pool and questions)."""
    pool = list(record.models) if record else []
    labels = [f"{model_letter(i)} {m}" for i, m in enumerate(pool)]
    out: list[Any] = []
    c = tr.correct
    head = Text()
    head.append(tr.qid, style="bold")
    head.append(
        f" · {tr.benchmark} · gen {tr.gen} · candidate {tr.candidate}"
        f" · mode {tr.mode or '—'} · cost {usd(_given(tr, 'cost_usd', tr.cost_usd), 6)} · reward {tr.reward} · "
    )
    head.append(
        "right ✓" if c is True else "wrong ✗" if c is False else "not graded",
        style="bold green" if c is True else "bold red" if c is False else "dim",
    )
    out.append(head)
    text, where = question_for(record, tr.qid)
    out.append(
        Panel(Text(text) if text is not None else Text(where, style="dim"), title="question", title_align="left")
    )
    for k, turn in enumerate(tr.turns, start=1):
        m = turn.model
        letter = f"{model_letter(pool.index(m))} " if m in pool else ""
        title = (
            f"turn {k} · {letter}{m} · {turn.role}"
            + (f" · verdict {turn.verdict}" if turn.verdict else "")
            + f" · {usd(_given(turn, 'cost_usd', turn.cost_usd), 6)}"
            + (" · cache hit" if turn.cache_hit else "")
            + (" · scored from the outcome matrix" if tr.mode == "cached" else "")
        )
        parts: list[Any] = [
            Text("model", style="dim"),
            prob_bars(turn.model_probs, labels, f"{letter}{m}".strip()),
            Text("role", style="dim"),
            prob_bars(turn.role_probs, list(ROLES), turn.role),
        ]
        if turn.output:
            parts.append(Markdown(turn.output, code_theme="monokai"))
        else:
            parts.append(
                Text("(no output recorded: cached mode looks the answer up in the outcome matrix)", style="dim")
            )
        # the full title wraps inside the card (a panel's own title is cut at 80 columns)
        out.append(Panel(Group(Text(title, style="bold"), *parts), title=f"turn {k}", title_align="left"))
    verdict = Text()
    verdict.append("graded answer ", style="dim")
    if tr.answer is None:
        verdict.append(
            "— none extracted" + (" (cached mode records correctness, not an answer)" if tr.mode == "cached" else ""),
            style="dim",
        )
    else:
        verdict.append(answer_text(tr.answer))
    verdict.append("\ngold          ", style="dim")
    verdict.append(gold_text(tr.kind, tr.gold))
    out.append(
        Panel(
            verdict,
            title="verdict",
            title_align="left",
            border_style="green" if c is True else "red" if c is False else "dim",
        )
    )
    return out


def trace_plain_text(tr: TraceRecord, record: RunMeta | None) -> str:
    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    for part in render_trace(tr, record):
        console.print(part)
    return console.export_text(styles=False)


class TraceDetailScreen(Screen):
    CSS_PATH = "traces.tcss"
    BINDINGS = [
        Binding("escape,backspace", "app.pop_screen", "Back", id="trace.back"),
        Binding("q", "app.pop_screen", "Back", show=False, id="trace.q"),
        Binding("y", "copy", "Copy text", id="trace.copy"),
    ]

    def __init__(self, snap: RunSnapshot, offset: int) -> None:
        super().__init__()
        self.snap = snap
        self.trace_offset = offset

    def action_copy(self) -> None:
        """The trace as plain text (question, every turn's output, answer, gold) to the clipboard
        through the terminal (OSC 52: works over SSH in most terminals)."""
        try:
            tr = read_trace(self.snap.path / "traces.jsonl", self.trace_offset)
        except (OSError, ValueError) as e:
            self.notify(f"could not read the trace: {e}", severity="error")
            return
        text = trace_plain_text(tr, self.snap.record)
        self.app.copy_to_clipboard(text)
        self.notify(f"trace copied ({len(text):,} characters, OSC 52)")

    def compose(self) -> ComposeResult:
        try:
            tr = read_trace(self.snap.path / "traces.jsonl", self.trace_offset)
            parts = render_trace(tr, self.snap.record)
        except (OSError, ValueError) as e:
            parts = [Text(f"could not read the trace at byte {self.trace_offset}: {e}", style="red")]
        with VerticalScroll(id="trace-detail"):
            for p in parts:
                yield Static(p)
        yield KeyBar()
