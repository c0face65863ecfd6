"""The trace detail shows each kind's gold as a miner reads it (BBH, IFEval, BFCL, HumanEval)."""

from __future__ import annotations

from rich.console import Console

from minertui.screens.trace_detail import render_trace
from trinity.runs.records import RunMeta, parse_trace


def _text(tr: dict) -> str:
    console = Console(record=True, width=120)
    for part in render_trace(parse_trace(tr), RunMeta(id="r", models=["m/a"])):
        console.print(part)
    return console.export_text()


def test_gold_by_kind():
    base = {"qid": "q", "benchmark": "b", "gen": 0, "candidate": 0, "turns": [], "correct": False, "answer": None}
    cases = [
        ("exact", {"target": "(B)", "form": "choice"}, "(B) (choice)"),
        ("ifeval", {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}, "follow: punctuation:no_comma"),
        (
            "funcall",
            {"function": [{}], "ground_truth": [{"area": {"base": [10], "unit": ["cm", ""]}}]},
            'area(base=10, unit="cm"?)',
        ),
        ("math", "42", "gold          42"),
    ]
    for kind, gold, want in cases:
        assert want in _text({**base, "kind": kind, "gold": gold}), kind


def test_synthetic_traces_cover_every_kind(tmp_path):
    # minertui.synth takes its kinds from trinity.data.kinds (the one source): a kind added there
    # shows up in the app's synthetic runs, with a trace the detail view renders
    from minertui.synth import make_run
    from trinity.data.kinds import KINDS
    from trinity.grading import describe_gold
    from trinity.io import read_jsonl

    run = make_run(tmp_path / "r", generations=6, traces_per_gen=16).path
    traces = read_jsonl(run / "traces.jsonl")
    assert {t["kind"] for t in traces} == set(KINDS)
    for kind in KINDS:
        tr = next(t for t in traces if t["kind"] == kind)
        if tr["gold"] is not None:
            assert describe_gold(kind, tr["gold"]).split("\n")[0][:20] in _text(tr), kind
