"""`python -m minertui.jobs.analysis KIND[,KIND…] RUN_DIR [--width N]` — analyses of a run, in a
child process, because loading a run's router imports torch and the app process must not. Several
kinds run one after another in the one process (torch imported once), each reported as below.

It calls the analysis library (`trinity.analysis`: oracle_for_run, cached_baselines,
evaluate_run; for a Milestone-1 run `trinity.m1.evaluate.RunEval`, what `trinity m1 eval` runs) with a progress callback and speaks JSON lines on stdout:
  {"begin": KIND}
  {"progress": [done, total, "what"]}
  {"result": KIND, "report": <report.to_json()>, "view": "<the findings rendered with ANSI>",
   "tables": <trinity.analysis.render.table_data(view)>}
  {"error": "one line", "kind": KIND}
The view is the library's own Rich rendering (`trinity.analysis.render`) less its tables, which
come as data (shown cells and their values), so the app and `trinity oracle|baselines|eval` show
the same tables and the app can sort and filter them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from trinity.errors import InputError, TrinityError

KINDS = ("oracle", "baselines", "eval", "m1")


def _say(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


def progress(done: int, total: int, what: str) -> None:
    _say({"progress": [int(done), int(total), str(what)]})


def _render(view, width: int) -> str:
    from rich.console import Console  # lazy: rich loaded only when used

    console = Console(
        width=width, record=True, file=open("/dev/null", "w"), color_system="truecolor", force_terminal=True
    )
    # soft_wrap: no hard line breaks; the app's pane wraps the prose at its own width (a pre-wrapped
    # line, wrapped again by a pane a few cells narrower, broke paths mid-word: "run." / "js" / "on")
    console.print(view, soft_wrap=True)
    return console.export_text(styles=True)


def findings(view):
    """The view's prose without its tables, and without the oracle's verdict and the router's
    claim, which the app's verdict line above every report already shows."""
    from rich.console import Group  # lazy: rich loaded only when used
    from rich.text import Text  # lazy: rich loaded only when used

    from trinity.analysis.render import prose_of  # lazy: numpy + pydantic loaded only when used

    return Group(
        *(
            p
            for p in prose_of(view).renderables
            if not (isinstance(p, Text) and p.plain.startswith(("verdict: ", "router ")))
        )
    )


def run_oracle(run_dir: str, split: str):
    from trinity.analysis.evaluate import oracle_for_run  # lazy: numpy + pydantic loaded only when used
    from trinity.analysis.render import oracle_view  # lazy: numpy + pydantic loaded only when used

    rep = oracle_for_run(run_dir, split, progress=progress)  # what `trinity oracle --run` reports
    return rep, oracle_view(rep)


def run_baselines(run_dir: str, split: str):
    from trinity.analysis.baselines import cached_baselines  # lazy: numpy + PyYAML loaded only when used
    from trinity.analysis.inputs import select_ids  # lazy: numpy + pydantic loaded only when used
    from trinity.analysis.render import baselines_view  # lazy: numpy + pydantic loaded only when used
    from trinity.optim.runinputs import load_run_inputs  # lazy: numpy + pydantic loaded only when used

    inputs = load_run_inputs(run_dir)
    if inputs.matrix is None:
        raise InputError(f"{run_dir}: the run has no outcome matrix; use `trinity baselines --pool` for live")
    sel = select_ids(inputs.matrix, split, None, run=run_dir)
    rep = cached_baselines(inputs.matrix, sel.ids, split=split, source=sel.source, progress=progress)
    return rep, baselines_view(rep)


def run_eval(run_dir: str, split: str):
    from trinity.analysis.evaluate import evaluate_run  # lazy: numpy + pydantic loaded only when used
    from trinity.analysis.render import eval_view  # lazy: numpy + pydantic loaded only when used

    rep = evaluate_run(run_dir, split=split, mode="cached", progress=progress)
    return rep, eval_view(rep)


class _M1Report(dict):
    def to_json(self) -> dict:
        return dict(self)


def run_m1(run_dir: str, split: str):
    """A Milestone-1 run: what `trinity m1 eval` computes (`RunEval.evaluate`) on the run's own
    files, and the same view (systems, per-domain figures, domain confusion)."""
    from trinity.m1.evaluate import RunEval  # lazy: torch + numpy loaded only when used
    from trinity.m1.render import eval_view  # lazy: numpy + pydantic loaded only when used

    progress(0, 2, "features of the test split")
    ev = RunEval(run_dir, split=split)
    progress(1, 2, "the head, the baselines and their intervals")
    rep = ev.evaluate()
    progress(2, 2, "done")
    return _M1Report(rep), eval_view(rep)


def _kinds(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"invalid kind {','.join(bad) or text!r} (choose from {', '.join(KINDS)})")
    return kinds


def run_one(kind: str, run_dir: str, split: str, width: int) -> int:
    """One analysis, reported on stdout; its exit status (0, 2: bad input, 1: a failure)."""
    _say({"begin": kind})
    try:
        fn = {"oracle": run_oracle, "baselines": run_baselines, "eval": run_eval, "m1": run_m1}[kind]
        rep, view = fn(run_dir, split)
        from trinity.analysis.render import table_data  # lazy: numpy + pydantic loaded only when used

        _say(
            {
                "result": kind,
                "report": rep.to_json(),
                "view": _render(findings(view), width),
                "tables": table_data(view),
            }
        )
    except TrinityError as e:
        _say({"error": str(e), "kind": kind})
        return 2
    except Exception as e:  # show it in the app as one line; the app never prints tracebacks
        _say({"error": f"{type(e).__name__}: {e}", "kind": kind})
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minertui.jobs.analysis")
    ap.add_argument("kinds", type=_kinds, metavar="KIND[,KIND…]", help=f"one or more of {', '.join(KINDS)}")
    ap.add_argument("run_dir")
    ap.add_argument("--split", default="test")
    ap.add_argument("--width", type=int, default=100)
    args = ap.parse_args(argv)
    codes = [run_one(kind, args.run_dir, args.split, args.width) for kind in args.kinds]
    return max(codes, key=lambda c: (c != 0, c == 2))  # a bad input (2) before a failure (1)


if __name__ == "__main__":
    raise SystemExit(main())
