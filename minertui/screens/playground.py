"""Playground mode: ask the selected run's router a question of your own.

Type or paste a question (or `n`: the next of the run's own test questions, with its reference
answer) and press Enter: the router's turn-1 probabilities over (model, role), computed with the
run's encoder and competition text, nothing sent to a pool. `t` steps: the turn the router picked
joins the transcript (with the output typed in the second field, if any) and the next turn's
probabilities show. `l` runs the session live on the run's pool under the budget (`u` changes
it), each turn's output, verdict, tokens and cost as it arrives, then the final answer and, with
a reference, the grade; what it pays goes to `<runs root>/playground/ledger.jsonl`. `b` puts a
second trained run side by side: the same question, both routers.

The routers live in a child process (`minertui.jobs.playground`): loading one imports torch, which
the app process never does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Static

from minertui.reader import Poll
from minertui.screens.common import ModeScreen
from minertui.widgets.format import bar, usd
from trinity.pool.ledger import read_ledger
from trinity.runs.rundir import list_runs

KINDS = ("math", "mc", "code")
BUDGETS = (0.01, 0.05, 0.25, 1.0)
ROLES = ("Thinker", "Worker", "Verifier")


_SPEND_CACHE: dict[str, tuple[tuple[int, int], tuple[int, float]]] = {}


def playground_spend(runs_root: Path) -> tuple[int, float] | None:
    """(calls, USD) in `<runs root>/playground/ledger.jsonl`, the Playground's live sessions; None
    when it has none. Read again only when the file changed (Ledger calls it on every refresh)."""
    path = Path(runs_root) / "playground" / "ledger.jsonl"
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _SPEND_CACHE.get(str(path))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        rows = read_ledger(path)
    except Exception:  # a torn or foreign file: `trinity ledger verify` says why
        return None
    spent = (len(rows), sum(r.cost_micro_usd for r in rows) / 1e6)
    _SPEND_CACHE[str(path)] = (stamp, spent)
    return spent


def short(model: str) -> str:
    return model.rsplit("/", 1)[-1]


@dataclass
class PaneState:
    """What one run's pane shows."""

    name: str = ""
    competition: str = ""
    routes: list[dict[str, Any]] = field(default_factory=list)  # one per step: turn 1, 2, …
    live: list[dict[str, Any]] = field(default_factory=list)  # the live session's turns
    session: dict[str, Any] | None = None
    answer_text: str = ""


def probs_lines(route: dict[str, Any], width: int) -> Text:
    """The model and role probabilities of one turn as bars, the picked ones in bold."""
    t = Text()
    label_w = max([len(short(m)) for m in route["model_probs"]] + [8])
    bar_w = max(4, min(30, width - label_w - 8))
    for group, picked in (("model_probs", route["model"]), ("role_probs", route["role"])):
        for name, p in route[group].items():
            style = "bold" if name == picked else "dim"
            t.append(f"{short(name):<{label_w}} {p:4.2f} ", style=style)
            t.append(bar(float(p), bar_w) + "\n", style=style)
    return t


def pane_text(p: PaneState, width: int, budget: float) -> Text:
    t = Text()
    t.append(p.name or "—", style="bold")
    if p.competition:
        t.append(f" · {p.competition} text", style="dim")
    t.append("\n")
    if p.routes:
        k = len(p.routes)
        last = p.routes[-1]
        t.append(f"turn {k} route (free)\n", style="bold")
        t.append(probs_lines(last, width))
        t.append(f"→ {short(last['model'])} as {last['role']}\n")
        if k > 1:
            t.append(
                "earlier: "
                + ", ".join(f"t{i + 1} {short(r['model'])}·{r['role']}" for i, r in enumerate(p.routes[:-1])),
                style="dim",
            )
            t.append("\n")
    if p.live:
        t.append(f"live session (budget {usd(budget)})\n", style="bold")
        for turn in p.live:
            t.append(f"t{turn['turn']} {short(turn['model'])}·{turn['role']}")
            if turn.get("verdict"):
                t.append(f" {turn['verdict']}", style="green" if turn["verdict"] == "ACCEPT" else "yellow")
            t.append(f" {turn['prompt_tokens'] + turn['completion_tokens']} tok {usd(turn['cost_usd'], 6)}")
            if turn.get("cache_hit"):
                t.append(" cached", style="dim")
            if not turn.get("ok", True):
                t.append(f" failed: {turn.get('error')}", style="red")
            out = " ".join(str(turn.get("output") or "").split())
            t.append(f"\n  {out[: max(10, width * 2 - 4)]}\n", style="dim")
    if not p.routes and not p.live:
        t.append(
            "e: type a question, Enter: its route (free) · n: one of the run's questions · t: step · "
            "l: run it live on the pool · b: a second run side by side",
            style="dim",
        )
    if p.session is not None:
        s = p.session
        t.append("answer: ", style="bold")
        ans = s.get("answer") or " ".join(p.answer_text.split())[:width] or "(none)"
        t.append(str(ans))
        if s.get("correct") is True:
            t.append(" ✓ correct", style="bold green")
        elif s.get("correct") is False:
            t.append(" ✗ wrong", style="bold red")
        t.append(f"\n{s['n_turns']} turns · {s['stopped']} · {usd(s['cost_usd'], 6)}\n", style="dim")
    return t


class PlaygroundScreen(ModeScreen):
    MODE = "Playground"
    CSS_PATH = "playground.tcss"
    AUTO_FOCUS = ""  # the mode's keys work on arrival; e (or Tab) goes to the question
    BINDINGS = [
        Binding("e", "edit", "Ask", id="playground.edit"),
        Binding("t", "step", "Step", id="playground.step"),
        Binding("l", "live", "Live", id="playground.live"),
        Binding("n", "next_question", "Run's question", id="playground.next"),
        Binding("k", "kind", "Kind", id="playground.kind"),
        Binding("b", "second_run", "Side by side", id="playground.second"),
        Binding("u", "budget", "Budget", id="playground.budget"),
        Binding("c", "clear", "Clear", id="playground.clear"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.proc: subprocess.Popen[str] | None = None
        self.host_runs: tuple[str, ...] = ()
        self.ready: dict[str, Any] | None = None
        self.busy = ""
        self.kind = "math"
        self.budget = BUDGETS[1]
        self.qid: str | None = None
        self.reference: str | None = None
        self.run_b: Path | None = None
        self.steps: list[list[str]] = []  # the transcript the router reads: [role, model, output]
        self.panes: list[PaneState] = []
        self.question_index = -1
        self.spent: tuple[int, float] | None = None  # (calls, USD) in the playground ledger

    def read_spent(self) -> None:
        """What the playground ledger holds (every live session's calls, all runs)."""
        self.spent = playground_spend(Path(self.app.runs_root))

    # ---- layout ----

    def compose_body(self) -> ComposeResult:
        yield Input(placeholder="type or paste a question, Enter: the router's route (free)", id="pg-question")
        yield Input(placeholder="t: step — the picked turn's output (optional)", id="pg-output")
        yield Static(id="pg-status")
        with Horizontal(id="pg-panes"):
            with VerticalScroll(classes="pg-pane"):
                yield Static(id="pg-pane-a")
            with VerticalScroll(classes="pg-pane", id="pg-pane-b-scroll"):
                yield Static(id="pg-pane-b")

    def update_body(self, poll: Poll) -> None:
        self._ensure_host()
        self.redraw()

    def on_unmount(self) -> None:
        self._stop_host()

    # ---- the router host (a child process) ----

    def run_paths(self) -> tuple[str, ...]:
        cur = self.app.current
        if cur is None or not (Path(cur.path) / "best_theta.npy").exists():
            return ()
        paths = [str(cur.path)]
        if self.run_b is not None and self.run_b != Path(cur.path):
            paths.append(str(self.run_b))
        return tuple(paths)

    def _ensure_host(self) -> None:
        paths = self.run_paths()
        if paths == self.host_runs:
            return
        # an idle host with its routers loaded takes the new runs in place: no new process (and
        # no second torch import) for a run added side by side
        swap = bool(paths) and self.proc is not None and self.proc.poll() is None
        swap = swap and self.ready is not None and not self.busy
        if not swap:
            self._stop_host()
        self.host_runs = paths
        self.ready = None
        self.panes = [PaneState(name=Path(p).name) for p in paths]
        self.steps = []
        if not paths:
            return
        self.busy = "loading the router…"
        if swap and self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(json.dumps({"op": "runs", "runs": list(paths)}) + "\n")
                self.proc.stdin.flush()
                return
            except OSError:  # the host just ended: start another
                self._stop_host()
        argv = [sys.executable, "-m", "minertui.jobs.playground", *paths, "--runs-root", str(self.app.runs_root)]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1
        )
        self._read(self.proc)

    def _stop_host(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=5)
            except Exception:
                proc.kill()

    @work(thread=True, group="playground-host", exit_on_error=False)
    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self.app.call_from_thread(self._host_message, proc, msg)
        self.app.call_from_thread(self._host_exit, proc)

    def _host_exit(self, proc: subprocess.Popen[str]) -> None:
        if proc is self.proc:
            self.proc = None
            self.host_runs = ()
            if self.busy:
                self.notify("the router host ended; switch modes to start it again", severity="error")
            self.busy = ""
            self.redraw()

    def _host_message(self, proc: subprocess.Popen[str], msg: dict[str, Any]) -> None:
        if proc is not self.proc:
            return
        if "ready" in msg:
            self.ready = msg["ready"]
            for pane, info in zip(self.panes, self.ready["runs"]):
                pane.name, pane.competition = info["name"], info["competition"]
            self.busy = ""
            self.read_spent()
        elif "route" in msg:
            for r in msg["route"]:
                self.panes[r["run"]].routes.append(r)
            self.busy = ""
        elif "turn" in msg:
            self.panes[msg["run"]].live.append(msg["turn"])
        elif "session" in msg:
            pane = self.panes[msg["run"]]
            pane.session, pane.answer_text = msg["session"], msg.get("answer_text") or ""
        elif "live_done" in msg:
            self.busy = ""
            self.read_spent()
            self.app.poll_soon()
        elif "error" in msg:
            self.busy = ""
            self.notify(str(msg["error"]), severity="error", timeout=10)
        self.redraw()

    def send(self, cmd: dict[str, Any], busy: str) -> bool:
        if self.proc is None or self.proc.stdin is None or self.ready is None:
            self.notify(
                "no trained run: select one with best_theta.npy in Runs (1)"
                if not self.host_runs
                else "the router is loading",
                severity="warning",
            )
            return False
        if self.busy:
            self.notify(f"still {self.busy.rstrip('…')}", severity="warning")
            return False
        self.busy = busy
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        self.redraw()
        return True

    def question_cmd(self) -> dict[str, Any] | None:
        text = self.query_one("#pg-question", Input).value.strip()
        if not text:
            self.notify("type a question first (or n: one of the run's)", severity="warning")
            return None
        if self.qid is not None:
            return {"qid": self.qid}
        return {"question": text, "kind": self.kind, "reference": self.reference}

    # ---- actions ----

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "pg-question":
            self.route_now(reset=True)
        elif event.input.id == "pg-output":
            self.action_step()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "pg-question" and self.qid is not None and self.ready is not None:
            qs = {q["id"]: q for q in self.ready["runs"][0]["questions"]}
            if qs.get(self.qid, {}).get("question") != event.value:
                self.qid, self.reference = None, None  # edited: a question of your own now

    def route_now(self, reset: bool) -> None:
        q = self.question_cmd()
        if q is None:
            return
        if reset:
            self.steps = []
            for p in self.panes:
                p.routes, p.live, p.session, p.answer_text = [], [], None, ""
        self.send({"op": "route", **q, "turns": self.steps}, "routing…")

    def action_step(self) -> None:
        if not self.panes or not self.panes[0].routes:
            self.route_now(reset=True)
            return
        last = self.panes[0].routes[-1]
        out_field = self.query_one("#pg-output", Input)
        q = self.question_cmd()
        if q is None:
            return
        steps = [*self.steps, [last["role"], last["model"], out_field.value]]
        if self.send({"op": "route", **q, "turns": steps}, "routing…"):
            self.steps = steps
            out_field.value = ""

    def action_edit(self) -> None:
        self.query_one("#pg-question", Input).focus()

    def action_live(self) -> None:
        q = self.question_cmd()
        if q is None:
            return
        for p in self.panes:
            p.live, p.session, p.answer_text = [], None, ""
        self.send({"op": "live", **q, "budget_usd": self.budget}, "running the session live…")

    def action_next_question(self) -> None:
        if self.ready is None or not self.ready["runs"][0]["questions"]:
            self.notify("the run's questions are not available", severity="warning")
            return
        qs = self.ready["runs"][0]["questions"]
        self.question_index = (self.question_index + 1) % len(qs)
        q = qs[self.question_index]
        self.query_one("#pg-question", Input).value = q["question"]
        self.qid, self.kind, self.reference = q["id"], q["kind"], q.get("answer")
        self.route_now(reset=True)

    def action_kind(self) -> None:
        self.kind = KINDS[(KINDS.index(self.kind) + 1) % len(KINDS)]
        self.qid = None
        self.redraw()

    def action_budget(self) -> None:
        self.budget = BUDGETS[(BUDGETS.index(self.budget) + 1) % len(BUDGETS)]
        self.redraw()

    def action_clear(self) -> None:
        self.query_one("#pg-question", Input).value = ""
        self.query_one("#pg-output", Input).value = ""
        self.qid, self.reference, self.steps = None, None, []
        for p in self.panes:
            p.routes, p.live, p.session, p.answer_text = [], [], None, ""
        self.redraw()

    def action_second_run(self) -> None:
        cur = self.app.current
        here = Path(cur.path) if cur is not None else None
        trained = [
            r.path for r in list_runs(self.app.runs_root) if (r.path / "best_theta.npy").exists() and r.path != here
        ]
        options: list[Path | None] = [*trained, None]
        i = options.index(self.run_b) if self.run_b in options else -1
        self.run_b = options[(i + 1) % len(options)]
        self.notify(f"side by side: {self.run_b.name}" if self.run_b else "one run")
        self._ensure_host()
        self.redraw()

    # ---- drawing ----

    def status_text(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f"kind {self.kind}", style="bold")
        t.append(f" · budget {usd(self.budget)}")
        if self.reference is not None:
            t.append(f" · reference {self.reference}")
        if len(self.panes) > 1:
            t.append(" · side by side")
        if self.spent is not None and self.spent[0]:
            t.append(f" · playground spent {usd(self.spent[1], 6)} ({self.spent[0]} calls)", style="dim")
        if self.busy:
            t.append(f" · {self.busy}", style="yellow")
        elif not self.host_runs:
            t.append(" · select a trained run in Runs (1)", style="yellow")
        return t

    def redraw(self) -> None:
        try:
            self.query_one("#pg-status", Static).update(self.status_text())
            two = len(self.panes) > 1
            self.query_one("#pg-pane-b-scroll").display = two
            width = max(20, (self.size.width // (2 if two else 1)) - 4)
            for scroll in self.query(".pg-pane"):
                if any(p.live for p in self.panes):
                    scroll.call_after_refresh(scroll.scroll_end, animate=False)
            a = self.query_one("#pg-pane-a", Static)
            if self.panes:
                a.update(pane_text(self.panes[0], width, self.budget))
            else:
                a.update(Text("Select a trained run (one with best_theta.npy) in Runs (1).", style="dim"))
            if two:
                self.query_one("#pg-pane-b", Static).update(pane_text(self.panes[1], width, self.budget))
        except Exception:  # not mounted yet: on_mount draws it
            pass
