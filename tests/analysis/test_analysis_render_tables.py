"""`trinity.analysis.render.table_data`: the report tables as data, each cell with the value it
shows (what the app's sortable tables sort on), and the terminal rendering unchanged by it."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

from trinity.analysis.oracle import oracle_ceiling
from trinity.analysis.render import oracle_view, prose_of, table_data
from trinity.data.matrix import OutcomeMatrix, merge_matrices


def two_benchmarks():
    q = 8
    a = np.zeros((q, 2, 4))
    a[: q // 2, 0], a[q // 2 :, 1] = 1, 1  # complementary specialists on math500
    b = np.ones((q, 2, 4))
    b[0, 1] = 0  # y misses one mmlu question
    ma = OutcomeMatrix("math500", ["x", "y"], [f"a{i}" for i in range(q)], a)
    mb = OutcomeMatrix("mmlu", ["x", "y"], [f"b{i}" for i in range(q)], b)
    return oracle_ceiling(merge_matrices([ma, mb]), splits=20, bootstrap=200)


def test_oracle_tables_carry_the_reports_numbers():
    rep = two_benchmarks()
    main, per = table_data(oracle_view(rep))
    assert [c["name"] for c in main["columns"]] == ["quantity", "value", "how"]
    by_name = {r[0]["value"]: r for r in main["rows"]}
    row = by_name["naive oracle"]
    assert row[1]["value"] == rep.naive_oracle and row[1]["text"] == f"{rep.naive_oracle:.3f}"
    assert by_name["models disagree"][1]["value"] == rep.disagreement_rate  # shown as a percent
    assert by_name["headroom"][1]["value"] == rep.crossfit["headroom_ci"]["point"]  # "+x [lo, hi]"
    assert by_name["McNemar oracle vs best"][1]["value"] == rep.crossfit["mcnemar"]["p_value"]
    for m, ci in zip(rep.models, rep.per_model):
        name = f"always {m}" + (" ★" if m == rep.best_single else "")
        assert by_name[name][1]["value"] == ci.point
    assert main["columns"][2]["style"] == "dim"
    # the per-benchmark table: numbers, None where it shows "—" (no router here)
    assert per["title"].startswith("Each benchmark alone")
    names = [c["name"] for c in per["columns"]]
    rows = {r[0]["value"]: r for r in per["rows"]}
    assert set(rows) == {"math500", "mmlu"}
    for bench, r in rows.items():
        want = rep.per_benchmark[bench]
        assert r[names.index("n")]["value"] == want["n_questions"]
        assert r[names.index("cross-fit oracle")]["value"] == pytest.approx(want["crossfit_oracle"])
        assert r[names.index("router")] == {"text": "—", "value": None}
        assert r[names.index("verdict")]["value"] == want["verdict"]
        assert want["verdict"] in r[names.index("verdict")]["text"]  # Rich markup keeps its colour


def test_the_terminal_view_keeps_its_tables_and_the_prose_has_none():
    rep = two_benchmarks()
    view = oracle_view(rep)
    out = io.StringIO()
    Console(width=120, file=out, color_system=None).print(view)
    text = out.getvalue()
    assert "naive oracle" in text and f"{rep.naive_oracle:.3f}" in text and "Each benchmark alone" in text
    prose = prose_of(view)
    assert not any(isinstance(p, Table) for p in prose.renderables)
    out = io.StringIO()
    Console(width=120, file=out, color_system=None).print(prose)
    assert "verdict:" in out.getvalue() and "naive oracle" not in out.getvalue()
