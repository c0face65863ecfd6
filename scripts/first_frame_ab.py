"""The app's first frame, interleaved A/B: two source trees of minertui, alternated round by round
(the order flips every round), so both see the same load on a shared box.

    python scripts/first_frame_ab.py [--a /work/main] [--b .] [--rounds 15]   # figures: docs/perf/app.md

Each sample is `python -m minertui --runs-dir …` started in a pseudo-terminal (80×24) with
PYTHONPATH set to the tree, timed from the process start until the frame holds the title and the
Runs mode (as `minertui bench` times it; Python start-up included). Modules at first frame: the
length of `sys.modules` when Textual's app is ready (mounted, the first frame about to be drawn),
read through a small wrapper that runs the same `minertui` entry point; the same wrapper gives
the process's CPU seconds until then (start-up included; one sample a tree a round): on a loaded
box the wall time mostly measures waiting for a core, the CPU time does not. The 1-minute load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from minertui.bench import end_process

# runs `minertui --runs-dir …`; when the app is ready it writes the process's CPU seconds so far
# (start-up included) and the names in sys.modules to $FF_MODULES_OUT
WRAPPER = """
import os, sys, time
from textual.app import App
_ready = App._ready
async def ready(self):
    await _ready(self)
    with open(os.environ["FF_MODULES_OUT"], "w") as f:
        f.write("\\n".join([repr(time.process_time()), *sorted(sys.modules)]))
    self.exit()
App._ready = ready
from minertui.__main__ import main
raise SystemExit(main(sys.argv[1:]))
"""


def _launch(
    argv: list[str], tree: Path, cfg: Path, extra_env: dict[str, str] | None = None
) -> tuple[float | None, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", XDG_CONFIG_HOME=str(cfg), PYTHONPATH=str(tree), **(extra_env or {}))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=env,
        cwd=cfg.parent,  # not a source tree: `-m` and `-c` put the working directory first on sys.path
    )
    os.close(slave)
    buf, took = b"", None
    while time.perf_counter() - t0 < 30:
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            if took is None and b"minertui" in buf and b"Runs" in buf:
                took = time.perf_counter() - t0
                if not extra_env:
                    break
        elif proc.poll() is not None:
            break
    end_process(proc)
    os.close(master)
    return took, buf[-400:].decode(errors="replace")


def first_frame(tree: Path, runs: Path, cfg: Path) -> float:
    took, tail = _launch(["-m", "minertui", "--runs-dir", str(runs)], tree, cfg)
    if took is None:
        raise SystemExit(f"{tree}: no first frame within 30 s; the terminal showed: {tail!r}")
    return took


def at_first_frame(tree: Path, runs: Path, cfg: Path, out: Path) -> tuple[float, list[str]]:
    """(CPU seconds the process used until the app was ready, the modules loaded by then)."""
    out.unlink(missing_ok=True)
    _launch(["-c", WRAPPER, "--runs-dir", str(runs)], tree, cfg, {"FF_MODULES_OUT": str(out)})
    if not out.is_file():
        raise SystemExit(f"{tree}: the app never became ready")
    cpu, *mods = out.read_text().split("\n")
    return float(cpu), mods


def _origin(tree: Path, runs: Path, cfg: Path, base: Path) -> Path:
    """Where the app a sample starts is imported from (PYTHONPATH must win over the install)."""
    out = base / "origin"
    code = f"import minertui, pathlib; pathlib.Path({str(out)!r}).write_text(minertui.__file__)"
    subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(tree)), cwd=base, check=True)
    return Path(out.read_text()).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", default="/work/main", help="tree A (default /work/main)")
    p.add_argument("--b", default=str(Path(__file__).resolve().parents[1]), help="tree B (default: this tree)")
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    trees = {"A": Path(args.a).resolve(), "B": Path(args.b).resolve()}
    for name, tree in trees.items():
        if not (tree / "minertui" / "__main__.py").is_file():
            raise SystemExit(f"--{name.lower()} {tree}: not a minertui source tree (no minertui/__main__.py)")
    sys.path.insert(0, str(trees["B"]))
    from minertui.synth import make_run

    with tempfile.TemporaryDirectory(prefix="first-frame-ab-") as tmp:
        base = Path(tmp)
        runs, cfg = base / "runs", base / "config"
        make_run(runs / "run-a", generations=30, planned=60)
        cfg.mkdir()
        print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
        mods = {n: at_first_frame(t, runs, cfg, base / f"mods-{n}")[1] for n, t in trees.items()}
        for n, t in trees.items():
            if not any(m.startswith("minertui") for m in mods[n]) or _origin(t, runs, cfg, base) != t:
                raise SystemExit(f"tree {n}: the app did not run from {t}")
        for _ in range(2):  # warm the file cache and the bytecode of both trees
            for t in trees.values():
                first_frame(t, runs, cfg)
        times: dict[str, list[float]] = {"A": [], "B": []}
        cpu: dict[str, list[float]] = {"A": [], "B": []}
        for i in range(args.rounds):
            for n in ("A", "B") if i % 2 == 0 else ("B", "A"):
                times[n].append(first_frame(trees[n], runs, cfg))
                cpu[n].append(at_first_frame(trees[n], runs, cfg, base / "cpu")[0])
        print(f"load average after:  {os.getloadavg()[0]:.2f} (1 min)")
    for n, tree in trees.items():
        ts = sorted(times[n])
        print(
            f"{n} {tree}: first frame median {statistics.median(ts):.3f} s (min {ts[0]:.3f}, max {ts[-1]:.3f}, "
            f"n={len(ts)}); CPU until ready {statistics.median(cpu[n]):.3f} s median; "
            f"modules at first frame {len(mods[n])}"
        )
        heavy = [m for m in ("pydantic", "numpy", "yaml", "trinity.runs.records", "minertui.demo") if m in mods[n]]
        print(f"  loaded at first frame: {', '.join(heavy) or 'none of pydantic, numpy, yaml, records, demo'}")
    ma, mb = statistics.median(times["A"]), statistics.median(times["B"])
    print(f"B/A: {mb / ma:.2f} ({mb - ma:+.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
