"""`minertui [--runs-dir DIR] [--theme NAME]`, `minertui demo`, `minertui open RUN_DIR`,
`minertui bench [--json]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minertui.hangup import HangupGuard
from trinity.errors import TrinityError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minertui",
        description="The miner's terminal workstation: runs, live training, ledger, traces, analysis, submission.",
    )
    p.add_argument("--runs-dir", default="runs", help="where runs live (default ./runs)")
    p.add_argument("--theme", help="theme name (see themes/*.toml; remembered between sessions)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="offline demo: practice pool server + a live practice run, no key needed")
    d.add_argument(
        "--runs-dir",
        dest="demo_runs_dir",
        default=None,
        help="runs dir for the demo (default: $XDG_STATE_HOME/minertui/demo, i.e. "
        "~/.local/state/minertui/demo; the newest 3 demo runs are kept)",
    )
    o = sub.add_parser("open", help="open one run directory (running or finished)")
    o.add_argument("run_dir", metavar="RUN_DIR")
    b = sub.add_parser("bench", help="benchmark the app (not a test): first frame, refresh cost, memory")
    b.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    b.add_argument("--keep", metavar="DIR", help="write the synthetic run here and keep it")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        from minertui.bench import run  # lazy: numpy + PyYAML kept off the app's first frame

        return run(args)

    try:
        from minertui.app import MinerApp  # lazy: textual + pydantic kept off the app's first frame

        if args.command == "open":
            run_dir = Path(args.run_dir)
            if not (run_dir / "run.json").is_file():
                raise TrinityError(f"{run_dir} is not a run directory (no run.json); give a directory under runs/")
            app = MinerApp(runs_root=run_dir.resolve().parent, theme=args.theme, open_run=run_dir, start_mode="train")
        elif args.command == "demo":
            from minertui.demo import demo_runs_dir  # lazy: only `minertui demo` loads the demo (numpy + PyYAML)

            app = MinerApp(runs_root=demo_runs_dir(args.demo_runs_dir), theme=args.theme, start_mode="train", demo=True)
        else:
            root = Path(args.runs_dir)
            if root.exists() and not root.is_dir():
                raise TrinityError(
                    f"--runs-dir {root} is a file, not a directory; give the folder that holds "
                    "your runs (default ./runs)"
                )
            app = MinerApp(runs_root=root, theme=args.theme)
        app.hangup_guard = HangupGuard(app, cleanup=app.release_servers).install()
        app.run()
        app.hangup_guard.stop()
        if getattr(app, "exit_note", ""):
            print(app.exit_note, file=sys.stderr)
        rc = app.return_code  # 1 after an internal error (logged to a crash file, one line shown)
    except TrinityError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    return int(rc or 0)


if __name__ == "__main__":
    raise SystemExit(main())
