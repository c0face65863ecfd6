"""Rich tables for the analysis reports (the terminal view; `--json` gives the data).

Each table of a view is a `ValueTable`: beside each shown cell it keeps the cell's value (the
number a "0.917 [0.880, 0.950]" or "12.3%" cell shows, None for "—"), so `table_data(view)`
hands another front end (the app's sortable tables) the same tables with numbers to sort on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from rich.console import Console, Group, JustifyMethod, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from trinity.analysis.score import OVERFIT_FACTOR, OVERFIT_PENALISE, OVERFIT_REJECT, RULES_DOC_OVERFIT
from trinity.analysis.stats import CI
from trinity.competition.notice import rewards_notice

if TYPE_CHECKING:
    from trinity.analysis.baselines import BaselineReport, SystemResult
    from trinity.analysis.evaluate import EvalReport
    from trinity.analysis.oracle import OracleReport
    from trinity.analysis.score import ScoreReport

# a cell: what it shows, or (what it shows, the value it sorts by)
Cell = Union[RenderableType, tuple[RenderableType, object]]

VERDICT_STYLE = {"POOL_BOUND": "yellow", "ROUTER_BOUND": "cyan", "NEAR_CEILING": "green", "INCONCLUSIVE": "magenta"}
# the columns of a table of systems (the router, each model alone, random routing)
SYSTEM_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("system", "left"),
    ("accuracy [95%]", "right"),
    ("turns", "right"),
    ("cost", "right"),
    ("$/correct", "right"),
)


def p_text(p: float) -> str:
    """'= 0.0123', or '< 1e-300' where the exact p-value underflows a float (it is not 0)."""
    return f"= {p:.3g}" if p > 0 else "< 1e-300"


def escape_title(s: str) -> str:
    return escape(s)


def ci_text(ci: CI | dict[str, Any] | None, signed: bool = False) -> str:
    if ci is None:
        return "—"
    if isinstance(ci, dict):
        ci = CI(**ci)
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(ci.point)} [{f.format(ci.lo)}, {f.format(ci.hi)}]"


class ValueTable(Table):
    """A Rich table that also keeps, per row, the value each cell shows (see `_row`)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.row_values: list[tuple[object, ...]] = []

    def add_value_row(self, *cells: Cell) -> None:
        """A row whose cells are `(shown, value)` pairs or plain cells (see `_row`)."""
        _row(self, *cells)


def _pt(ci: CI | dict[str, Any] | None) -> float | None:
    """The point estimate a CI cell shows (None for "—")."""
    if ci is None:
        return None
    return float(ci["point"] if isinstance(ci, dict) else ci.point)


def _row(t: Table, *cells: Cell) -> None:
    """Add a row whose plain strings are shown literally (model names and labels may hold '[…]').
    A cell `(shown, value)` shows `shown` and sorts by `value`; any other cell's value is its text."""
    shown: list[RenderableType] = []
    values: list[object] = []
    for c in cells:
        if isinstance(c, tuple):
            c, v = c
        else:
            v = c.plain if isinstance(c, Text) else c
        shown.append(Text(c) if isinstance(c, str) else c)
        values.append(v)
    t.add_row(*shown)
    if isinstance(t, ValueTable):
        t.row_values.append(tuple(values))


def _plain_value(v: object) -> str | int | float | None:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v if v is None or isinstance(v, (str, int, float)) else str(v)


def table_data(view: RenderableType) -> list[dict[str, Any]]:
    """The tables of a view (`oracle_view` etc.) as plain data, in order: {"title", "caption",
    "columns": [{"name", "justify", "style"}], "rows": [[{"text": Rich markup, "value"}]]}.
    Values are numbers where the cell shows one (None where it shows "—"), else the cell's text."""
    out: list[dict[str, Any]] = []
    parts = list(view.renderables) if isinstance(view, Group) else [view]
    for t in parts:
        if not isinstance(t, Table):
            continue
        cols = [
            {
                "name": str(c.header.plain if isinstance(c.header, Text) else c.header),
                "justify": c.justify,
                "style": str(c.style or ""),
            }
            for c in t.columns
        ]
        cells = [list(c.cells) for c in t.columns]
        values = t.row_values if isinstance(t, ValueTable) else []
        rows = []
        for r in range(t.row_count):
            row = []
            for j in range(len(cols)):
                c = cells[j][r]
                text = c if isinstance(c, Text) else Text(str(c))
                v = values[r][j] if r < len(values) else text.plain
                row.append({"text": text.markup, "value": _plain_value(v)})
            rows.append(row)
        title, caption = t.title, t.caption
        out.append(
            {
                "title": title.plain if isinstance(title, Text) else str(title or ""),
                "caption": caption.plain if isinstance(caption, Text) else str(caption or ""),
                "columns": cols,
                "rows": rows,
            }
        )
    return out


def prose_of(view: RenderableType) -> Group:
    """A view without its tables: the findings written out (verdict, claim, notes)."""
    parts = list(view.renderables) if isinstance(view, Group) else [view]
    return Group(*(p for p in parts if not isinstance(p, Table)))


def _notes(notes: list[str]) -> Text:
    return Text("\n".join(f"note: {n}" for n in notes), style="dim")


def oracle_view(rep: OracleReport) -> Group:
    t = ValueTable(
        title=escape_title(
            f"Oracle ceiling — {rep.benchmark}: {rep.n_questions} questions, {len(rep.models)} models, k={rep.k}"
        ),
        title_justify="left",
    )
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_column("how", style="dim")
    for m, ci in zip(rep.models, rep.per_model):
        star = " ★" if m == rep.best_single else ""
        _row(t, f"always {m}{star}", (ci_text(ci), _pt(ci)), "accuracy, 95% CI over questions")
    _row(t, "best single", (f"{rep.best_single_acc:.3f}", rep.best_single_acc), rep.best_single)
    _row(t, "naive oracle", (f"{rep.naive_oracle:.3f}", rep.naive_oracle), "in-sample max over models — BIASED UPWARD")
    _row(
        t,
        "models disagree",
        (f"{rep.disagreement_rate:.1%}", rep.disagreement_rate),
        "questions whose majority verdicts differ",
    )
    cf = rep.crossfit
    if cf:
        _row(
            t,
            "cross-fit oracle",
            (f"{cf['oracle']:.3f}", cf["oracle"]),
            f"choose on {cf['half']} sample(s), score on the rest; {cf['splits']} splits",
        )
        _row(
            t,
            "cross-fit best single",
            (f"{cf['best_single']:.3f}", cf["best_single"]),
            f"{cf['best_single_model']}, same splits",
        )
        _row(
            t,
            "headroom",
            (ci_text(cf["headroom_ci"], signed=True), _pt(cf["headroom_ci"]))
            if cf["headroom_ci"]
            else (f"{cf['headroom']:+.3f}", cf["headroom"]),
            f"oracle − best single, bootstrap {rep.bootstrap}× over questions",
        )
        mc = cf["mcnemar"]
        _row(
            t,
            "McNemar oracle vs best",
            (f"p {p_text(mc['p_value'])}", mc["p_value"]),
            f"{mc['a_only']} only-oracle vs {mc['b_only']} only-best questions",
        )
        _row(
            t,
            "oracle switches model",
            (f"{cf['oracle_switch_rate']:.1%}", cf["oracle_switch_rate"]),
            "questions routed away from the best",
        )
    else:
        _row(t, "cross-fit oracle", ("—", None), "impossible with k < 2")
    if rep.router:
        _row(
            t,
            "router accuracy",
            (f"{rep.router['accuracy']:.3f}", rep.router["accuracy"]),
            "the trained router on these questions",
        )
        cap = rep.router.get("headroom_captured")
        _row(
            t,
            "headroom captured",
            (f"{cap:.0%}" if cap is not None else "—", cap),
            rep.router.get("headroom_captured_note", "(router − best) / (oracle − best)"),
        )
    style = VERDICT_STYLE.get(rep.verdict, "")
    verdict = Text.assemble(("verdict: ", "bold"), (rep.verdict, f"bold {style}"), f" — {rep.verdict_reason}")
    parts: list[RenderableType] = [t, verdict]
    ln = getattr(rep, "learnable", None)
    if ln:  # issue 14: the achievable (cross-validated) bound beside the per-question ceiling
        for g in ln["gains"]:
            _row(
                t,
                f"learnable gain ({g['method']}, CV)",
                (ci_text(g["gain"], signed=True), _pt(g["gain"])),
                f"{g['folds']}-fold CV on frozen features: {g['accuracy']:.3f} vs best single {g['best_single_acc']:.3f}",
            )
        parts.append(Text.assemble(("learnable: ", "bold"), (ln["verdict"], "bold cyan"), f" — {ln['reason']}"))
    if rep.per_benchmark:
        b = ValueTable(title="Each benchmark alone (the competition scores them separately)", title_justify="left")
        # both held-out (cross-fit) numbers side by side, so the headroom is their difference
        per_cols: tuple[tuple[str, JustifyMethod], ...] = (
            ("benchmark", "left"),
            ("n", "right"),
            ("cross-fit best single", "right"),
            ("cross-fit oracle", "right"),
            ("headroom [95%]", "right"),
            ("router", "right"),
            ("verdict", "left"),
        )
        for col, j in per_cols:
            # the verdict is the point of the table: never cut it to "INCONCLUS…" at 80 columns
            b.add_column(col, justify=j, no_wrap=col == "verdict", min_width=12 if col == "verdict" else None)
        for name, r in rep.per_benchmark.items():
            cf, cb = r["crossfit_oracle"], r.get("crossfit_best_single")
            ra = r["router_accuracy"]
            _row(
                b,
                name,
                (str(r["n_questions"]), r["n_questions"]),
                (f"{cb:.3f}", cb) if cb is not None else (f"{r['best_single_acc']:.3f} (all k)", r["best_single_acc"]),
                (f"{cf:.3f}" if cf is not None else "—", cf),
                (ci_text(r["headroom_ci"], signed=True), _pt(r["headroom_ci"])),
                (f"{ra:.3f}" if ra is not None else "—", ra),
                Text(r["verdict"], style=VERDICT_STYLE.get(r["verdict"], "")),
            )
        parts.append(b)
    return Group(*parts, _notes(rep.notes))


def _system_rows(t: Table, systems: Sequence[SystemResult], random_ci: CI, seeds: int) -> None:
    for s in systems:
        cpc = s.cost_per_correct
        _row(
            t,
            s.name,
            (ci_text(s.accuracy), _pt(s.accuracy)),
            (f"{s.avg_turns:.2f}", s.avg_turns),
            (f"${s.cost_usd:.4f}", s.cost_usd),
            (f"${cpc:.5f}" if cpc is not None else "—", cpc),
        )
    _row(t, f"random routing ({seeds} seeds)", (ci_text(random_ci), _pt(random_ci)), ("", None), ("", None), ("", None))


def baselines_view(rep: BaselineReport) -> Group:
    t = ValueTable(
        title=escape_title(f"Baselines — {rep.benchmark}, {rep.mode}, {rep.n_questions} questions ({rep.source})"),
        title_justify="left",
    )
    for col, j in SYSTEM_COLUMNS:
        t.add_column(col, justify=j)
    _system_rows(t, rep.always, rep.random, rep.random_seeds)
    for s in getattr(rep, "features", []):  # issue 14: routers on the frozen features, cross-validated
        _row(
            t,
            s.name,
            (ci_text(s.accuracy), _pt(s.accuracy)),
            (f"{s.avg_turns:.2f}", s.avg_turns),
            (f"${s.cost_usd:.4f}", s.cost_usd),
            ("—", None),
        )
    return Group(t, Text(f"best single: {rep.best_single}"), _notes(rep.notes))


def eval_view(rep: EvalReport) -> Group:
    t = ValueTable(
        title=escape_title(f"Evaluation — {rep.split}, {rep.mode}, {rep.n_questions} questions"), title_justify="left"
    )
    for col, j in SYSTEM_COLUMNS:
        t.add_column(col, justify=j)
    _system_rows(t, [rep.router, *rep.singles], rep.random, rep.random_seeds)
    c = ValueTable(title="Router minus baseline (paired, same questions)", title_justify="left")
    diff_cols: tuple[tuple[str, JustifyMethod], ...] = (
        ("baseline", "left"),
        ("difference [95%]", "right"),
        ("McNemar p", "right"),
        ("reading", "left"),
    )
    for col, j in diff_cols:
        c.add_column(col, justify=j)
    for cmp in rep.comparisons:
        style = {"better": "green", "worse": "red"}.get(cmp.outcome, "yellow")
        _row(
            c,
            cmp.baseline,
            (ci_text(cmp.diff, signed=True), _pt(cmp.diff)),
            (p_text(cmp.mcnemar.p_value).removeprefix("= "), cmp.mcnemar.p_value),
            Text(cmp.outcome, style=style),
        )
    mix = ", ".join(f"{m} {n}" for m, n in rep.model_mix.items())
    roles = ", ".join(f"{r} {n}" for r, n in rep.role_mix.items())
    if len(rep.per_benchmark) > 1:
        per = "; ".join(
            f"{b} {d['accuracy']:.3f} (n={d['n']}, best single {d['best_single_accuracy']:.3f})"
            for b, d in rep.per_benchmark.items()
        )
        c.caption = f"router per benchmark: {per}"
    lines = [
        Text.assemble(("router ", "bold"), rep.claim),
        Text(f"turn-1 models: {mix}" + (f"; roles: {roles}" if roles else "")),
    ]
    return Group(t, c, *lines, _notes(rep.notes))


def score_view(rep: ScoreReport) -> Group:
    out: list[RenderableType] = []
    for b in rep.benchmarks:
        i = b.inputs
        t = Table(title=escape_title(f"Score estimate — {i.benchmark}"), title_justify="left")
        t.add_column("component")
        t.add_column("value", justify="right")
        t.add_column("source", style="dim")
        for name, comp in (
            ("cached accuracy ×0.70", i.cached),
            ("live accuracy ×0.15", i.live),
            ("avg turns (live)", i.avg_turns),
            ("novelty ×0.05", i.novelty),
            ("overfit gap (eval − audit)", i.overfit_gap),
        ):
            shown = "not measured" if comp.value is None else f"{comp.value:.3f}"
            src = comp.source
            if comp is i.novelty:
                shown = f"{b.novelty_used:.3f}"
                if b is not rep.benchmarks[0]:
                    src = "pr_eval counts novelty for the first benchmark only: 0 here"
            _row(t, name, shown, src)
        _row(
            t,
            "overfit penalty",
            "REJECTS ALL" if b.rejected else f"×{b.penalty:.2f}",
            f"pr_eval.py: > {OVERFIT_REJECT} rejects the submission, > {OVERFIT_PENALISE} ×{OVERFIT_FACTOR} "
            f"(COMPETITION_RULES.md says {RULES_DOC_OVERFIT[0]}/{RULES_DOC_OVERFIT[1]})",
        )
        for s in b.scenarios:
            _row(t, f"score [{s.name}]", f"{s.score:.4f}", f"efficiency {s.efficiency:.3f} at {s.avg_turns:.2f} turns")
        out.append(t)
    composite = Table(title="Composite (mean over benchmarks)", title_justify="left", min_width=48)
    composite.add_column("scenario")
    composite.add_column("composite", justify="right")
    if rep.king:
        composite.add_column("king estimate", justify="right")
        composite.add_column("margin", justify="right")
    for n, v in rep.composite.items():
        row = [n, f"{v:.4f}"]
        if rep.king:
            k, m = rep.king["composite"].get(n), rep.king["margin"].get(n)
            row += [f"{k:.4f}" if k is not None else "—", f"{m:+.4f}" if m is not None else "see below"]
        _row(composite, *row)
    out += [composite, Text(rep.dethrone, style="bold red" if rep.rejected else "")]
    if rep.promotion:
        pr = rep.promotion
        king = "none (threshold)" if pr["king"] is None else f"{pr['king']:.4f}"
        out.append(
            Text(
                f"MiniRouter promotion estimate: {pr['score']:.4f} on {pr['items']} items, king {king} → "
                f"{'PROMOTES' if pr['promotes'] else 'not promoted'} ({pr['rule']}; {pr['source']})"
            )
        )

    out += [Text("rewards: " + rewards_notice().line(), style="yellow"), _notes(rep.notes)]
    return Group(*out)


def print_view(view: RenderableType) -> None:
    Console().print(view)
