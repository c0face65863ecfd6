"""The Rich view of `trinity m1 eval`'s report: the systems (the head and its baselines on the
same features), the head's per-domain figures and its domain confusion matrix, as `ValueTable`s,
so the terminal and the app's sortable, exportable tables show the same cells from one report."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from trinity.analysis.render import ValueTable, ci_text, escape_title
from trinity.competition import m1

METRICS = (
    ("composite", "composite [95%]"),
    ("domain_accuracy", "domain acc [95%]"),
    ("difficulty_exact", "diff exact [95%]"),
)


def _opt(v: float | None) -> tuple[str, float | None]:
    return ("—", None) if v is None else (f"{v:.3f}", float(v))


def systems_table(rep: dict[str, Any]) -> Table:
    t = ValueTable(
        title=escape_title(
            f"Milestone 1 — {rep['m1_config']}, {rep['pool']}, {rep['n_test']} test prompts (the head and baselines)"
        ),
        title_justify="left",
    )
    t.add_column("system")
    for _, name in METRICS:
        t.add_column(name, justify="right", no_wrap=True)
    for name in ("±1", "macro-F1", "joint"):
        t.add_column(name, justify="right")
    for name, r in rep["systems"].items():
        t.add_value_row(
            name,
            *((ci_text({**r["ci"][k], "point": r[k]}), float(r[k])) for k, _ in METRICS),
            _opt(r["difficulty_within_1"]),
            _opt(r["domain_macro_f1"]),
            _opt(r["joint_accuracy"]),
        )
    t.caption = f"merge rule: composite ≥ king + {m1.WIN_MARGIN} on their fixed test split"
    return t


def per_domain_table(rep: dict[str, Any]) -> Table:
    t = ValueTable(title="Per domain — the head on the test split", title_justify="left")
    for name in ("domain", "n", "predicted", "accuracy", "precision", "F1"):
        t.add_column(name, justify="left" if name == "domain" else "right")
    for d in rep["per_domain"]:
        t.add_value_row(
            d["domain"], (str(d["n"]), d["n"]), (str(d["predicted"]), d["predicted"]),
            _opt(d["accuracy"]), _opt(d["precision"]), _opt(d["f1"]),
        )  # fmt: skip
    t.caption = "accuracy: the domain's prompts the head labels right; F1 as in the macro-F1"
    return t


def confusion_table(rep: dict[str, Any]) -> Table:
    conf = rep["confusion"]
    t = ValueTable(title="Domain confusion — rows: true domain, columns: predicted", title_justify="left")
    t.add_column("true \\ predicted")
    for lab in conf["labels"]:
        t.add_column(lab, justify="right")
    t.add_column("n", justify="right")
    for lab, row in zip(conf["labels"], conf["rows_true_cols_pred"]):
        t.add_value_row(lab, *((str(v), int(v)) for v in row), (str(sum(row)), int(sum(row))))
    return t


def eval_view(rep: dict[str, Any]) -> Group:
    head = rep["systems"].get("head")
    lines = []
    if head:
        base = {k: v["composite"] for k, v in rep["systems"].items() if k != "head"}
        best = max(base, key=lambda k: base[k]) if base else None
        claim = f"composite {head['composite']:.3f}"
        if best:
            claim += f" · best baseline {best} {base[best]:.3f} ({head['composite'] - base[best]:+.3f})"
        lines.append(Text.assemble(("head ", "bold"), claim))
    return Group(systems_table(rep), per_domain_table(rep), confusion_table(rep), *lines)
