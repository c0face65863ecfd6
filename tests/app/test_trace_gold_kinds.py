"""The trace detail shows each kind's gold as a miner reads it (BBH, IFEval, BFCL, HumanEval)."""

from __future__ import annotations

from rich.console import Console

from minertui.screens.trace_detail import render_trace


def _text(tr: dict) -> str:
    console = Console(record=True, width=120)
    for part in render_trace(tr, {"models": ["m/a"]}):
        console.print(part)
    return console.export_text()


def test_gold_by_kind():
    base = {"qid": "q", "benchmark": "b", "gen": 0, "candidate": 0, "turns": [], "correct": False, "answer": None}
    cases = [
        ("exact", {"target": "(B)", "form": "choice"}, "(B) (choice)"),
        ("ifeval", {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}, "follow: punctuation:no_comma"),
        ("funcall", {"function": [{}], "ground_truth": [{"area": {"base": [10], "unit": ["cm", ""]}}]},
         'area(base=10, unit="cm"?)'),
        ("math", "42", "gold          42"),
    ]
    for kind, gold, want in cases:
        assert want in _text({**base, "kind": kind, "gold": gold}), kind
