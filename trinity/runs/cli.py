"""`trinity status [RUNS_DIR]` and `trinity watch RUN_DIR`: how runs are doing, over a plain SSH
session without the app. Both read only the run directories' files (trinity.runs.status)."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from trinity.errors import InputError
from trinity.runs.fmt import age, duration, money
from trinity.runs.status import RunStatus, RunWatcher, root_of

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(ys: tuple[float, ...] | list[float], width: int) -> str:
    """The last `width` points as block characters, scaled to their own min..max."""
    ys = [y for y in ys if math.isfinite(y)][-max(1, width) :]
    if not ys:
        return ""
    lo, hi = min(ys), max(ys)
    span = hi - lo
    return "".join(SPARK[int((y - lo) / span * (len(SPARK) - 1)) if span > 0 else 3] for y in ys)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _acc(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _spend(s: RunStatus) -> str:
    return money(s.spend_usd) + (f"/{money(s.budget_usd)}" if s.budget_usd is not None else "")


def _gen(s: RunStatus) -> str:
    return f"{s.gen}/{s.generations}" if s.generations is not None else str(s.gen)


def _eta(s: RunStatus) -> str:
    if s.eta_secs is None:
        return "—"
    return duration(s.eta_secs) + (" (budget)" if s.eta_limit == "budget" else "")


def status_table(
    rows: list[RunStatus], width: int, now: float | None = None, labels: list[str] | None = None
) -> list[str]:
    """One line a run; the columns that fit `width` (the last event takes what is left).
    `labels`: what names each run (a sweep's trial: sweep/trials/id), else its id."""
    names = dict(zip((id(r) for r in rows), labels or [r.id for r in rows]))
    cols: list[tuple[str, Any]] = [
        ("RUN", lambda s: names[id(s)]),
        ("STATE", lambda s: s.state),
        ("GEN", _gen),
        ("BEST VAL", lambda s: _acc(s.best_val)),
        ("SPEND/BUDGET", _spend),
        ("ETA", _eta),
        ("MODE", lambda s: s.mode),
        ("UPDATED", lambda s: age(s.updated, now)),
    ]
    cells = [[h for h, _ in cols]] + [[str(f(s)) for _, f in cols] for s in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    # drop the least needed columns until the event column keeps at least 16 characters
    order = [6, 7, 5]  # MODE, UPDATED, ETA
    keep = list(range(len(cols)))
    while sum(widths[i] + 2 for i in keep) + 16 > width and order:
        keep.remove(order.pop(0))
    rest = max(10, width - sum(widths[i] + 2 for i in keep))
    out = []
    for k, r in enumerate(cells):
        ev = "LAST EVENT" if k == 0 else (rows[k - 1].error or rows[k - 1].last_event or "—")
        line = "  ".join(r[i].ljust(widths[i]) for i in keep) + "  " + _fit(ev, rest)
        out.append(_fit(line.rstrip(), width))
    return out


def watch_screen(s: RunStatus, width: int, height: int, now: float | None = None) -> list[str]:
    """A one-screen summary of a run, `height` lines at most, each at most `width` wide."""
    w = max(20, width)
    lines = [_fit(f"{s.id}  {s.state}  ({s.mode}{', ' + s.pool if s.pool else ''})", w)]
    if s.error:
        lines.append(_fit(s.error, w))
    frac = s.gen / s.generations if s.generations else 0.0
    bar_w = max(5, min(40, w - 30))
    n = int(round(min(1.0, frac) * bar_w))
    lines.append(_fit(f"generation {_gen(s)}  " + "█" * n + "░" * (bar_w - n) + f" {frac:.0%}", w))
    if s.progress:
        lines.append(_fit(f"  evaluating generation {s.gen + 1}: {s.progress[0]}/{s.progress[1]}", w))
    rate = f"{s.secs_per_gen:.1f} s/gen" if s.secs_per_gen else "— s/gen"
    lines.append(
        _fit(f"best val {_acc(s.best_val)}  last val {_acc(s.last_val)}  best fitness {_acc(s.best_fitness)}", w)
    )
    lines.append(_fit(f"spend {_spend(s)}  {rate}  ETA {_eta(s)}  updated {age(s.updated, now)}", w))
    if s.system:
        lines.append(_fit("system " + system_line(s.system), w))
    if s.val_curve:
        lines.append(_fit("val  " + sparkline(s.val_curve, w - 5), w))
    if s.best_curve:
        lines.append(_fit("best " + sparkline(s.best_curve, w - 5), w))
    if s.message and s.done:
        lines.append(_fit(s.message, w))
    room = height - len(lines) - 1
    if room > 0 and s.logs:
        lines.append("─" * min(w, 40))
        lines.extend(_fit(x, w) for x in s.logs[-(room - 1) :] if room > 1)
    return lines[:height]


def system_line(sys_: dict[str, Any]) -> str:
    """'GPU0 87% 10/80G · CPU 35% · RAM 12/63G · disk 41G free' from a sample (G: GiB)."""
    parts = []
    for g in sys_.get("gpus") or []:
        if isinstance(g, dict):
            util = g.get("util")
            parts.append(
                f"GPU{g.get('index', '')} {util if util is not None else '—'}% "
                f"{_gib(g.get('mem_used'))}/{_gib(g.get('mem_total'))}G"
            )
    if not parts and sys_.get("gpu_note"):
        parts.append("no GPU")
    if sys_.get("cpu") is not None:
        parts.append(f"CPU {sys_['cpu']:.0f}%")
    if sys_.get("ram_used") is not None:
        parts.append(f"RAM {_gib(sys_.get('ram_used'))}/{_gib(sys_.get('ram_total'))}G")
    if sys_.get("disk_free") is not None:
        parts.append(f"disk {_gib(sys_.get('disk_free'))}G free")
    return "  ".join(parts) or "—"


def _gib(b: object) -> str:
    if not isinstance(b, (int, float)):
        return "—"
    g = b / 2**30
    return f"{g:.1f}" if g < 10 else f"{g:.0f}"


def _size() -> tuple[int, int]:
    sz = shutil.get_terminal_size((80, 24))
    return sz.columns, sz.lines


def cmd_status(args: argparse.Namespace) -> int:
    root = Path(args.runs_dir)
    if not root.exists():
        raise InputError(f"{root}: no such directory; pass the runs directory (default: runs/)")
    if not root.is_dir():
        raise InputError(f"{root} is not a directory; pass the runs directory (default: runs/)")
    paths = root_of(root)
    rows = [RunWatcher(p).poll() for p in paths]
    labels = [p.relative_to(root).as_posix() if p != root else p.name for p in paths]
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=None))
        return 0
    if not rows:
        print(f"no runs under {root} (start one with `trinity train`)")
        return 0
    print("\n".join(status_table(rows, _size()[0], labels=labels)))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    path = Path(args.run_dir)
    if not (path / "run.json").is_file():
        raise InputError(f"{path} is not a run directory (no run.json); `trinity status` lists the runs")
    if args.interval <= 0:
        raise InputError(f"--interval must be above 0 seconds, got {args.interval}")
    watcher = RunWatcher(path)
    if args.once:
        s = watcher.poll()
        if args.json:
            print(json.dumps(s.to_json()))
        else:
            w, h = _size()
            print("\n".join(watch_screen(s, w, h)))
        return 0
    tty = sys.stdout.isatty() and not args.json
    last: dict[str, Any] | None = None
    try:
        while True:
            s = watcher.poll()
            if args.json:
                d = s.to_json()
                if d != last:
                    print(json.dumps(d), flush=True)
                    last = d
            else:
                w, h = _size()
                body = "\n".join(watch_screen(s, w, h - 1))
                if tty:  # home, draw, clear what is left of the old screen
                    sys.stdout.write("\x1b[H" + body.replace("\n", "\x1b[K\n") + "\x1b[K\x1b[J")
                else:
                    sys.stdout.write(body + "\n\n")
                sys.stdout.flush()
            if s.done:
                if tty:
                    sys.stdout.write("\n")
                return 0 if s.state == "finished" else 1
            time.sleep(args.interval)
    except KeyboardInterrupt:
        if tty:
            sys.stdout.write("\n")
        return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "status",
        help="one line per run under a runs directory: state, generation, best val, spend, ETA, last event",
    )
    p.add_argument("runs_dir", nargs="?", default=os.environ.get("TRINITY_RUNS_DIR", "runs"), metavar="RUNS_DIR")
    p.add_argument("--json", action="store_true", help="a JSON list, one object per run")
    p.set_defaults(func=cmd_status)
    w = sub.add_parser(
        "watch",
        help="a refreshing one-screen summary of a run (works over plain SSH, without the app)",
        description="Refreshes until the run ends (exit 0 when it finished, 1 when it stopped, failed "
        "or was interrupted) or Ctrl+C.",
    )
    w.add_argument("run_dir", metavar="RUN_DIR")
    w.add_argument("--once", action="store_true", help="print one snapshot and exit")
    w.add_argument("--json", action="store_true", help="JSON: one object (--once) or one line per change")
    w.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes (default 2)")
    w.set_defaults(func=cmd_watch)
