"""Submit mode: choose format and miner, pack the selected run (`trinity.submission.pack_run`),
the gate table (`check_bundle`), the plan (`plan_submission`: branch, files, message, push
target, PR), then one key to execute it (`execute_plan(on_step=…)`), streaming each git command
and its result; the PR or compare URL at the end, copyable (OSC 52).

All of it runs in thread workers (numpy + GitPython; no torch). The GitHub token, when set, is
read from the environment by the worker and never shown, logged or put in argv.

A Milestone-1 run (prompt triage) takes its own track: k packs `submissions/<miner>/m1/` in the
clone (`trinity.m1.run.pack_of_run`, what `trinity m1 pack` writes), g runs its gates in their
order (`trinity.competition.m1.run_gates`: weight sanity, parameter budget, one attempt a day),
the caption states its merge rule (composite ≥ king + 0.02), and l shows the `trinity m1 submit`
command that puts the pack on its branch (c copies it)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Checkbox, Input, RichLog, Select, Static

from minertui.accuracy import best_val, king_odds, n_val_of
from minertui.reader import Poll
from minertui.screens.common import ModeScreen
from minertui.settings import load_settings, save_settings
from minertui.widgets.forms import FormCheckbox
from minertui.widgets.runbar import shorten_middle
from trinity.competition import m1
from trinity.competition.notice import rewards_notice
from trinity.competition.profiles import get_profile
from trinity.errors import TrinityError
from trinity.runs.rundir import RunDir
from trinity.submission.gates import check_bundle
from trinity.submission.pack import pack_run

STATUS_STYLE = {
    "pass": "green",
    "fail": "bold red",
    "warn": "yellow",
    "skip": "dim",
    "ok": "green",
    "failed": "bold red",
    "running": "cyan",
    "skipped": "dim",
}


def gates_table(report) -> Table:
    t = Table(
        title=f"gates — {report.profile.title} ({report.format} bundle {Path(report.bundle).name}, "
        f"{report.bundle_hash[:12]})",
        title_justify="left",
        expand=True,
        box=None,
    )
    t.add_column("gate", no_wrap=True)
    t.add_column("result", no_wrap=True)
    t.add_column("why", ratio=1)
    for r in report.results:
        t.add_row(r.name, Text(r.status.upper(), style=STATUS_STYLE.get(r.status, "")), r.reason)
    for r in report.advisories:  # the competition's report-only checks
        if r.status == "warn":
            t.add_row(f"{r.name} (advisory)", Text("WARN", style=STATUS_STYLE["warn"]), r.reason)
    verdict = f"{report.profile.title} would say: {report.verdict()}"
    t.caption = ("all gates pass" if report.ok else f"{len(report.failed())} gate(s) fail") + f" · {verdict}"
    return t


def m1_gates_table(gates, pack_dir: Path, n_params: int, king: dict | None) -> Table:
    """A Milestone-1 pack's gates (`trinity.competition.m1.run_gates`), in their order."""
    t = Table(
        title=f"gates — {m1.TITLE} (pack {pack_dir.name}/ of {pack_dir.parent.name}, {n_params:,} params)",
        title_justify="left",
        expand=True,
        box=None,
    )
    t.add_column("gate", no_wrap=True)
    t.add_column("result", no_wrap=True)
    t.add_column("why", ratio=1)
    for g in gates:
        status = "pass" if g.ok else "fail"
        t.add_row(g.name, Text(status.upper(), style=STATUS_STYLE[status]), g.detail)
    failed = [g for g in gates if not g.ok]
    head = "all gates pass" if not failed else f"{len(failed)} gate(s) fail"
    k = king.get("composite") if king else None
    kt = f"king {float(k):.4f}, so ≥ {float(k) + m1.WIN_MARGIN:.4f}" if isinstance(k, (int, float)) else "no king yet"
    t.caption = f"{head} · merges when composite ≥ king + {m1.WIN_MARGIN} on their fixed test split ({kt})"
    return t


def m1_submit_command(pack_dir: Path, miner: str, repo: str) -> str:
    return f"trinity m1 submit {shlex.quote(str(pack_dir))} --miner {shlex.quote(miner)} --repo {shlex.quote(repo)}"


def _is_m1(s) -> bool:
    return s is not None and s.record is not None and s.record.mode == "m1"


def _shown_path(p: Path) -> str:
    """Relative to the working directory when under it (shorter), else as it is."""
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def odds_text(s, fmt: str, king: float | None) -> Text:
    """The odds that the bundle's true score clears the king by the competition's margin, from a
    bootstrap of its best validation accuracy over the run's validation questions."""
    t = Text()
    est, n = best_val(s), n_val_of(s)
    if est is None:
        t.append("odds vs king: no validation accuracy yet", style="dim")
        return t
    if n == 0:
        t.append(f"best val {est:.3f} · run.json records no validation split: no odds vs the king", style="dim")
        return t
    sc = get_profile(fmt).scoring
    if king is None:
        t.append(
            f"best val {est:.3f} (n={n}) · set the king's score with B in Train to see the odds of clearing it",
            style="dim",
        )
        return t
    promotion = sc.rule == "promotion"
    margin = 0.0 if promotion else sc.win_margin
    base = max(king, sc.threshold) if promotion else king
    o = king_odds(est, n, base, margin, strict=promotion)
    rule = f"> {base:.3f}" if promotion else f"≥ king {king:.3f} + {margin:g}"
    t.append(f"best val {est:.3f} [{o.lo:.3f}, {o.hi:.3f}] (n={n}) · needs {rule} · ")
    t.append(f"P(clears) {o.p_clear:.0%}", style="bold green" if o.p_clear >= 0.8 else "bold yellow")
    t.append(" (bootstrap; val accuracy as the score estimate)", style="dim")
    return t


def plan_text(plan) -> Text:
    t = Text()
    in_body = False
    for line in plan.describe():
        if line.startswith(("PR title", "PR body:")):
            in_body = True  # shown verbatim below
            continue
        if in_body and line.startswith("    "):
            continue
        in_body = False
        if (
            line.startswith("gates:")
            or line.startswith("  ")
            and plan.gate_report is not None
            and any(line.strip().startswith(s) for s in ("PASS", "FAIL", "WARN", "SKIP"))
        ):
            continue  # the gate table shows those
        style = "bold red" if line.startswith("REFUSED") else "yellow" if line.startswith("note") else ""
        t.append(line + "\n", style=style)
    t.append("\nPR exactly as it will be posted — title:\n", style="bold")
    t.append(plan.pr_title + "\n")
    t.append("body:\n", style="bold")
    t.append(plan.pr_body)
    return t


def prior_bundles(bundle: Path) -> list[str] | None:
    """The `submissions/` folder that holds `bundle` (as `trinity check` defaults to), so the
    duplicate gate compares against the checkout's earlier bundles instead of nothing."""
    for parent in Path(bundle).resolve().parents:
        if parent.name == "submissions" and parent.is_dir():
            return [str(parent)]
    return None


KEYS_HINT = (
    "k pack · g gates · l plan · x execute · c copy URL · PgUp/PgDn scroll the plan · "
    "Tab enters the form, Esc leaves it"
)


class SubmitScreen(ModeScreen):
    MODE = "Submit"
    CSS_PATH = "submit.tcss"
    AUTO_FOCUS = None  # arriving here, the mode keys work; Tab (or a click) enters the form
    BINDINGS = [
        Binding("k", "pack", "Pack", id="submit.pack"),
        Binding("g", "gates", "Gates", id="submit.gates"),
        Binding("l", "plan", "Plan", id="submit.plan"),
        Binding("x", "execute", "Execute", id="submit.execute"),
        Binding("c", "copy_url", "Copy URL", id="submit.copy"),
        Binding("pagedown", "scroll_plan(1)", "Scroll down", show=False, id="submit.scroll_down"),
        Binding("pageup", "scroll_plan(-1)", "Scroll up", show=False, id="submit.scroll_up"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.bundle: Path | None = None
        self.plan = None
        self.url: str | None = None
        self.busy: str | None = None
        self._key: tuple | None = None  # what the head shows
        self.m1_command: str | None = None  # a Milestone-1 pack's `trinity m1 submit` command

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="submit-form"):
            yield Select(
                [("tinyrouter", "tinyrouter"), ("minirouter", "minirouter")],
                value="tinyrouter",
                allow_blank=False,
                id="sub-format",
                compact=True,
            )
            yield Input(placeholder="miner name", id="sub-miner", compact=True)
            yield Input(placeholder="competition repo clone (path)", id="sub-repo", compact=True)
            # MiniRouter's PR check needs the MiniBridge identity (ids, not keys)
            bridge = Input(placeholder="owner_id key_id", id="sub-bridge", compact=True)
            bridge.tooltip = "MiniRouter only: your MiniBridge owner_id and key_id (ids, not keys)"
            yield bridge
        with Horizontal(id="submit-options"):
            yield FormCheckbox("push", id="sub-push", compact=True)
            yield FormCheckbox("PR", id="sub-pr", compact=True)
            yield FormCheckbox("skip gates", id="sub-skip", compact=True)
            # packing an unfinished run is refused unless the miner ticks this, deliberately
            yield FormCheckbox("force: pack an unfinished run", id="sub-force", compact=True)
        with VerticalScroll(id="submit-body"):
            yield Static(Text(KEYS_HINT, style="dim"), id="submit-help")
            yield Static(id="submit-gates")
            yield Static(id="submit-plan")
        yield RichLog(id="submit-log", wrap=True, markup=False, max_lines=2000, min_width=20)
        yield Static(id="submit-url")

    def on_mount(self) -> None:
        # the demo's throwaway repo, else what this miner used last time (settings)
        defaults = getattr(self.app, "submit_defaults", None) or {}

        remembered = None if defaults else load_settings()
        for key, kept in (
            ("miner", remembered and remembered.submit_miner),
            ("repo", remembered and remembered.submit_repo),
        ):
            value = defaults.get(key) or kept
            if isinstance(value, str) and value:
                self.query_one(f"#sub-{key}", Input).value = value

        # arriving here the mode keys work (k, g, l …); Textual would focus the format list
        self.call_after_refresh(self.set_focus, None)

    def _remember(self, f: dict[str, Any]) -> None:
        if getattr(self.app, "submit_defaults", None):
            return  # the demo's throwaway values are not the miner's

        save_settings(submit_miner=f["miner"], submit_repo=f["repo"])

    def on_select_changed(self, event: Select.Changed) -> None:
        self._refresh_head()

    def _history(self):
        """The demo keeps its own submission history, so its throwaway bundles never count as
        the miner's earlier submissions (duplicates, rate limit)."""
        return (getattr(self.app, "submit_defaults", None) or {}).get("history")

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._refresh_head()

    def action_scroll_plan(self, direction: int) -> None:
        body = self.query_one("#submit-body", VerticalScroll)
        (body.scroll_page_down if direction > 0 else body.scroll_page_up)(animate=False)

    def update_body(self, poll: Poll) -> None:
        s = poll.current
        force = self.query_one("#sub-force", Checkbox).value
        fmt = str(self.query_one("#sub-format", Select).value)
        king = getattr(self.app, "baseline", None)
        key = (str(s.path) if s else None, s.status if s else None, self.busy, force, fmt, king, s.version if s else 0)
        if key == self._key:
            return
        self._key = key
        t = Text()
        if s is None:
            t.append("No run selected: open one in Runs (1).", style="dim")
        else:
            t.append(f"run {s.id} ({s.status})")
            if s.status != "finished" and force:
                t.append(" — not finished; force is ticked: k packs its best θ so far", style="bold yellow")
            elif s.status != "finished":
                t.append(
                    " — not finished: packing is refused unless 'force' is ticked (it then packs the best θ so far)",
                    style="yellow",
                )
            if self.bundle:  # its own line, shortened in the middle: both ends of a path matter
                t.append("\nbundle " + shorten_middle(_shown_path(self.bundle), max(20, self.size.width - 9)))
            t.append("\n")
            if _is_m1(s):
                t.append(
                    f"{m1.TITLE}: k packs submissions/<miner>/m1/ in the clone · gates "
                    f"{', '.join(n for n, _ in m1.GATES)} · merges at composite ≥ king + {m1.WIN_MARGIN} · "
                    "l gives the `trinity m1 submit` command",
                    style="cyan",
                )
            else:
                t.append_text(odds_text(s, fmt, king if isinstance(king, float) else None))
        if self.busy:
            t.append(f" · {self.busy}…", style="bold cyan")
        t.append("\n" + KEYS_HINT, style="dim")

        t.append("\nrewards: " + rewards_notice().line(), style="yellow")
        self.query_one("#submit-help", Static).update(t)

    # ---- form ----------------------------------------------------------------------------
    def _form(self) -> dict[str, Any]:
        return {
            "fmt": self.query_one("#sub-format", Select).value,
            "miner": self.query_one("#sub-miner", Input).value.strip(),
            "repo": self.query_one("#sub-repo", Input).value.strip(),
            "push": self.query_one("#sub-push", Checkbox).value,
            "pr": self.query_one("#sub-pr", Checkbox).value,
            "skip_gates": self.query_one("#sub-skip", Checkbox).value,
            "force": self.query_one("#sub-force", Checkbox).value,
            "bridge": self.query_one("#sub-bridge", Input).value.replace(":", " ").split(),
        }

    def _need(self, *keys: str) -> dict[str, Any] | None:
        f = self._form()
        for k in keys:
            if not f[k]:
                self.notify(f"fill in the {k} field first", severity="warning")
                self.query_one(f"#sub-{k}").focus()
                return None
        if "repo" in keys and not Path(f["repo"]).expanduser().is_dir():
            self.notify(
                f"repo {f['repo']} is not a directory; give your clone of the competition repo", severity="error"
            )
            return None
        return f

    def _begin(self, what: str) -> bool:
        if self.busy:
            self.notify(f"{self.busy} is still running", severity="warning")
            return False
        self.busy = what
        self._refresh_head()
        return True

    def _end(self) -> None:
        self.busy = None
        self._refresh_head()

    def _refresh_head(self) -> None:
        self._key = None
        if self.app.latest is not None and self.is_current:
            self.show(self.app.latest)

    def _log(self, text: Text | str) -> None:
        self.query_one(RichLog).write(text)

    # ---- actions -------------------------------------------------------------------------
    def action_pack(self) -> None:
        s = self.app.current
        if s is None:
            self.notify("no run selected", severity="warning")
            return
        f = self._need("miner", "repo")
        if f is None:
            return
        if s.status != "finished":
            if not f["force"]:
                # the same refusal as `trinity pack` without --force, shown where the miner looks
                msg = (
                    f"run {s.id} is {s.status}, not finished; wait for it to finish, or tick "
                    "'force' to pack its best θ so far"
                )
                self._log(Text(f"pack refused: {msg}", style="red"))
                self.notify(f"pack refused: {msg}", severity="error", timeout=10)
                return
            self._log(
                Text(f"force: packing unfinished run {s.id} ({s.status}): its best θ so far", style="bold yellow")
            )
        if self._begin("packing"):
            self._remember(f)
            if _is_m1(s):
                self._pack_m1(s.path, f)
            else:
                self._pack(s.path, f, force=f["force"])

    @work(thread=True, group="submit", exit_on_error=False)
    def _pack_m1(self, run_dir: Path, f: dict[str, Any]) -> None:
        from trinity.m1.run import pack_of_run  # lazy: torch loaded only when used

        try:
            pack = pack_of_run(RunDir(run_dir), f["miner"])  # what `trinity m1 pack` writes
            out = pack.save(m1.submission_dir(Path(f["repo"]).expanduser(), f["miner"]))
            line = f"{out}: {pack.config} {pack.pool} W_domain {tuple(pack.W_domain.shape)} · {pack.n_params:,} params"
            self.app.call_from_thread(self._packed_m1, Path(out), line)
        except TrinityError as e:
            self.app.call_from_thread(self._failed, "pack", str(e))

    def _packed_m1(self, path: Path, line: str) -> None:
        self.bundle, self.plan, self.url, self.m1_command = path, None, None, None
        self._log(line)
        self.notify(f"packed {path}")
        self._end()
        self.action_gates()

    @work(thread=True, group="submit", exit_on_error=False)
    def _pack(self, run_dir: Path, f: dict[str, Any], force: bool) -> None:
        try:
            b = pack_run(
                run_dir, f["miner"], f["fmt"], out=Path(f["repo"]).expanduser(), force=force, history=self._history()
            )
            self.app.call_from_thread(self._packed, b)
        except TrinityError as e:
            self.app.call_from_thread(self._failed, "pack", str(e))

    def _packed(self, b) -> None:
        self.bundle, self.plan, self.url = Path(b.path), None, None
        for line in b.describe():
            self._log(line)
        self.notify(f"packed {b.path}")
        self._end()
        self.action_gates()

    def _failed(self, what: str, msg: str) -> None:
        self._log(Text(f"{what}: {msg}", style="red"))
        self.notify(f"{what}: {msg}", severity="error", timeout=10)
        self._end()

    def action_gates(self) -> None:
        if self.bundle is None:
            self.notify("pack a bundle first (k)", severity="warning")
            return
        if self._begin("checking the gates"):
            s = self.app.current
            if _is_m1(s):
                f = self._form()
                self._gates_m1(self.bundle, f["miner"], Path(f["repo"]).expanduser())
            else:
                self._gates(self.bundle, self._form()["miner"] or None, s.path if s else None)

    @work(thread=True, group="submit", exit_on_error=False)
    def _gates_m1(self, pack_dir: Path, miner: str, repo: Path) -> None:
        try:
            if not miner:
                raise TrinityError("fill in the miner field first: the rate limit is per miner")
            pack = m1.load_pack(pack_dir)
            gates = m1.run_gates(pack, miner, repo)
            king = m1.read_king(repo, pack.config)
            table = m1_gates_table(gates, pack_dir, pack.n_params, king)
            self.app.call_from_thread(self._gated_m1, table)
        except TrinityError as e:
            self.app.call_from_thread(self._failed, "gates", str(e))

    def _gated_m1(self, table: Table) -> None:
        self.query_one("#submit-gates", Static).update(table)
        self._end()

    @work(thread=True, group="submit", exit_on_error=False)
    def _gates(self, bundle: Path, miner: str | None, run_dir: Path | None) -> None:
        try:
            rep = check_bundle(bundle, prior_bundles(bundle), history=self._history(), miner=miner, run_dir=run_dir)
            self.app.call_from_thread(self._gated, rep)
        except TrinityError as e:
            self.app.call_from_thread(self._failed, "gates", str(e))

    def _gated(self, rep) -> None:
        self.query_one("#submit-gates", Static).update(gates_table(rep))
        self._end()

    def action_plan(self) -> None:
        if self.bundle is None:
            self.notify("pack a bundle first (k)", severity="warning")
            return
        f = self._need("miner", "repo")
        if f and _is_m1(self.app.current):
            self._plan_m1(self.bundle, f)
            return
        if f and self._begin("planning"):
            s = self.app.current
            self._plan(self.bundle, f, s.path if s else None)

    def _plan_m1(self, pack_dir: Path, f: dict[str, Any]) -> None:
        """A Milestone-1 pack goes on its branch with `trinity m1 submit` (gates again, then a
        commit in the clone); the plan is that command, its branch and its PR title."""
        try:
            pack = m1.load_pack(pack_dir)
        except TrinityError as e:
            self._failed("plan", str(e))
            return
        self.m1_command = m1_submit_command(pack_dir, f["miner"], f["repo"])
        t = Text()
        t.append(
            "Milestone 1 submission — run this (it checks the gates again, then commits the pack):\n", style="bold"
        )
        t.append(f"  {self.m1_command}\n", style="cyan")
        t.append("  (add --dry-run to see the plan first; c copies the command)\n", style="dim")
        t.append(f"branch   {m1.PROFILE.branch(f['miner'], pack.config)}\n")
        t.append(f"PR title {m1.PROFILE.pr_title(f['miner'], pack.config, pack.pool)}\n")
        t.append(f"files    {m1.submission_dir('', f['miner'])}/\n")
        t.append(f"merges when composite ≥ king + {m1.WIN_MARGIN} on their fixed test split\n")
        self.query_one("#submit-plan", Static).update(t)
        self.notify("M1: the PR goes through `trinity m1 submit` (c copies the command)")

    @work(thread=True, group="submit", exit_on_error=False)
    def _plan(self, bundle: Path, f: dict[str, Any], run_dir: Path | None) -> None:
        from trinity.submission.gitsubmit import plan_submission  # lazy: httpx loaded only when used

        try:
            plan = plan_submission(
                bundle,
                Path(f["repo"]).expanduser(),
                f["miner"],
                push=f["push"],
                pr=f["pr"],
                skip_gates=f["skip_gates"],
                run_dir=run_dir,
                against=prior_bundles(bundle),
                history=self._history(),
                owner_id=(f["bridge"][:1] or [None])[0],
                key_id=(f["bridge"][1:2] or [None])[0],
            )
            self.app.call_from_thread(self._planned, plan)
        except TrinityError as e:
            self.app.call_from_thread(self._failed, "plan", str(e))

    def _planned(self, plan) -> None:
        self.plan = plan
        if plan.gate_report is not None:
            self.query_one("#submit-gates", Static).update(gates_table(plan.gate_report))
        self.query_one("#submit-plan", Static).update(plan_text(plan))
        self.app.unsaved["submit"] = "the prepared (not executed) submission plan"
        if plan.refusals:
            self.notify(f"the plan is refused: {plan.refusals[0]}", severity="error", timeout=10)
        else:
            self.notify("plan ready: x executes it")
        self._end()

    def action_execute(self) -> None:
        if _is_m1(self.app.current):
            self.notify(
                "a Milestone-1 pack is submitted with `trinity m1 submit`: l shows the command, c copies it",
                severity="warning",
            )
            return
        if self.plan is None:
            self.notify("make the plan first (l)", severity="warning")
            return
        if self._begin("executing"):
            self._execute(self.plan)

    @work(thread=True, group="submit", exit_on_error=False)
    def _execute(self, plan) -> None:
        from trinity.submission import github  # lazy: httpx loaded only when used
        from trinity.submission.gitsubmit import execute_plan  # lazy: httpx loaded only when used

        token = os.environ.get(github.TOKEN_ENV) or None  # stays in this thread; never displayed
        try:
            res = execute_plan(plan, on_step=lambda st: self.app.call_from_thread(self._step, st), token=token)
            self.app.call_from_thread(self._executed, res)
        except TrinityError as e:
            self.app.call_from_thread(self._failed, "submit", str(e))

    def _step(self, st) -> None:
        if st.status == "running":
            self._log(Text(f"$ {st.command}", style="cyan"))
        else:
            out = st.output.strip()
            self._log(
                Text(
                    f"  [{st.status}] {st.seconds:.2f}s" + (f" {out.splitlines()[-1]}" if out else ""),
                    style=STATUS_STYLE.get(st.status, ""),
                )
            )

    def _executed(self, res) -> None:
        self.app.unsaved.pop("submit", None)
        self.url = res.pr_url or res.compare_url
        self.pushed = (res.branch, res.commit) if res.pushed or res.commit else None
        t = Text()
        t.append("done: " if res.ok else "stopped: ", style="bold green" if res.ok else "bold red")
        t.append(res.message)
        if res.continue_command and not res.ok:
            t.append(f"\ncontinue with: {res.continue_command}")
        if self.url:
            t.append(f"\n{'PR' if res.pr_url else 'compare'} URL: ", style="bold")
            t.append(self.url, style="underline")
            t.append("  (c copies it)", style="dim")
        self.query_one("#submit-url", Static).update(t)
        self._end()

    def action_copy_url(self) -> None:
        if _is_m1(self.app.current) and self.m1_command:
            self.app.copy_to_clipboard(self.m1_command)
            self.notify("the `trinity m1 submit` command is copied (OSC 52)")
            return
        if not self.url:
            pushed = getattr(self, "pushed", None)
            if pushed:  # pushed (or committed) to a remote that is not on GitHub: no URL exists
                branch, commit = pushed
                what = f"{branch}@{(commit or '')[:12]}"
                self.app.copy_to_clipboard(what)
                self.notify(f"no PR or compare URL (the remote is not a GitHub URL); copied {what}")
                return
            self.notify("no URL yet: execute a plan first (x)", severity="warning")
            return
        self.app.copy_to_clipboard(self.url)  # OSC 52: works over SSH in most terminals
        self.notify("URL copied to the clipboard (OSC 52)")
