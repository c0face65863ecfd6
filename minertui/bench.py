"""`minertui bench [--json] [--keep DIR]`: the app's figures (a benchmark, not a test).

- first frame: `minertui --runs-dir …` started in a pseudo-terminal (80×24); seconds from the
  process start until the run bar has been drawn (median of 3; it includes Python start-up);
- refresh cost: a run with 10,000 generations of history and 100,000 traces, fully loaded in a
  headless app (120×40); each sample appends one generation (and its 10 traces) like an engine,
  then times one refresh: the incremental read, the snapshot, the visible mode's redraw and the
  repaint (Train and Traces modes, median and max of 20);
  wall time and the process's CPU time (all threads) are both reported: on a shared machine
  the wall time mostly measures waiting for a core;
- filter: the Traces filters over all 100,000 traces (CPU), and typed into the search field
  until the filtered page is on screen; overlay: 8 runs × 10,000 generations smoothed, reduced
  and built into a plotext canvas (the compare redraw, CPU);
- memory: resident set size of that app process with the 100,000 traces loaded (and the
  share the run's columns take).
The run is written by `minertui.synth` in the documented formats.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import platform
import pty
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import numpy as np
import plotext
from textual.widgets import Input

from minertui.app import MinerApp
from minertui.runmodel import filter_traces
from minertui.synth import SynthRun, make_run
from minertui.widgets.curves import RUN_COLOURS, Series, View, draw_lines
from trinity.runs.system import SystemSampler

GENS, TRACES = 10_000, 100_000


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def end_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not gone within 10 s; reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def first_frame_s(
    runs_root: Path, repeats: int = 3, argv: tuple[str, ...] = (), until: bytes = b"Runs", config: Path | None = None
) -> list[float]:
    """`until`: what the frame must hold (b"system": Train with the system pane drawn)."""
    out = []
    for _ in range(repeats):
        master, slave = pty.openpty()

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        cfg = config or runs_root.parent / "config"
        env = dict(os.environ, TERM="xterm-256color", XDG_CONFIG_HOME=str(cfg))
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "minertui", *(argv or ("--runs-dir", str(runs_root)))],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=env,
        )
        os.close(slave)
        buf = b""
        took = None
        while time.perf_counter() - t0 < 30:
            r, _, _ = select.select([master], [], [], 0.05)
            if r:
                try:
                    buf += os.read(master, 65536)
                except OSError:
                    break
                if b"minertui" in buf and until in buf:
                    took = time.perf_counter() - t0
                    break
        end_process(proc)
        os.close(master)
        if took is None:
            raise RuntimeError("the app drew no first frame within 30 s")
        out.append(took)
    return out


async def refresh_costs(run_dir: Path, samples: int = 20) -> dict:
    rss0 = rss_mb()
    app = MinerApp(runs_root=run_dir.parent, poll=False, start_mode="traces")
    result: dict = {}
    async with app.run_test(size=(120, 40)) as pilot:
        t = time.perf_counter()
        model = app.reader.model(run_dir.resolve())
        model.want_traces = True
        while True:  # load the whole history (no per-poll budget: this is the initial load)
            model.poll(budget_s=1e9, max_bytes=8 << 20)
            if not model.snapshot().catching_up:
                break
        await app.refresh_now()
        await pilot.pause()
        result["load_s"] = time.perf_counter() - t
        snap = app.current
        assert len(snap.gens) == GENS and len(snap.traces) == TRACES, (len(snap.gens), len(snap.traces))
        result["rss_mb"] = rss_mb()
        result["rss_before_load_mb"] = rss0
        cols = sum(c._data.nbytes for c in model._t.values()) + sum(c._data.nbytes for c in model._g.values())
        result["columns_mb"] = cols / 2**20
        result["filter_ms"] = filter_ms(snap.traces)
        writer = SynthRun(run_dir, seed=9)
        writer.gen = GENS + 1
        for mode in ("train", "train+system", "traces"):
            app.action_mode(mode.split("+")[0])
            await app.refresh_now()
            await pilot.pause()
            if mode == "train+system":  # the system pane on: the reader samples the box once a second
                await pilot.press("y")
                await app.refresh_now()
                await pilot.pause()
            times, cpu = [], []
            for _ in range(samples):
                writer.generations(1, traces_per_gen=TRACES // GENS, calls_per_gen=0)
                t, c = time.perf_counter(), time.process_time()
                await app.refresh_now()
                await pilot.pause()
                times.append((time.perf_counter() - t) * 1000)
                cpu.append((time.process_time() - c) * 1000)  # all threads of this process
            result[f"refresh_ms_{mode}"] = {
                "median": statistics.median(times),
                "max": max(times),
                "cpu_median": statistics.median(cpu),
            }
        # the Traces mode's filter as the miner uses it: type in the search field, wait for the
        # filtered first page on screen (filter over every trace + the page's rows)

        times, cpu = [], []
        for text in ("1", "12", "", "3", ""):
            t, c = time.perf_counter(), time.process_time()
            app.screen.query_one("#flt-qid", Input).value = text
            await pilot.pause()
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        result["filter_redraw_ms"] = {"median": statistics.median(times), "cpu_median": statistics.median(cpu)}
        t = time.perf_counter()
        await app.refresh_now()  # nothing new: what every idle 2 Hz tick costs
        await pilot.pause()
        result["idle_refresh_ms"] = (time.perf_counter() - t) * 1000
    return result


def system_sample_ms(repeats: int = 20) -> dict:
    """One sample of the box (NVML when present, /proc, disk) as the reader thread takes it."""
    sm = SystemSampler(Path.cwd())
    sm.sample(os.getpid())  # NVML's start-up is paid once
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        s = sm.sample(os.getpid())
        times.append((time.perf_counter() - t) * 1000)
    return {"median": statistics.median(times), "max": max(times), "gpus": len(s["gpus"])}


def filter_ms(tv, repeats: int = 5) -> dict:
    """The Traces filters over every trace: benchmark + right/wrong + model + a question-id
    search (CPU ms of one full filter, median of `repeats`)."""
    cpu = []
    for _ in range(repeats):
        c = time.process_time()
        idx = filter_traces(tv, bench=tv.bench_names[0], correct=1, model=tv.model_names[0], qid_search="1")
        cpu.append((time.process_time() - c) * 1000)
    return {"cpu_median": statistics.median(cpu), "traces": len(tv), "kept": len(idx)}


def overlay_ms(runs: int = 8, gens: int = GENS, repeats: int = 5) -> dict:
    """Compare mode's redraw: `runs` runs × `gens` generations overlaid, EMA-smoothed with the
    raw series faint, reduced and built into a 120×30 plotext canvas (CPU ms, median)."""
    rng = np.random.default_rng(0)
    x = np.arange(1, gens + 1, dtype=np.float64)
    series = [
        Series(f"run-{i}", x, np.maximum.accumulate(rng.random(gens) * 0.5 + 0.3), RUN_COLOURS[i % 8])
        for i in range(runs)
    ]
    cpu = []
    for _ in range(repeats):
        c = time.process_time()
        plotext.clf()
        plotext.plotsize(120, 30)
        draw_lines(plotext, series, View(smoothing=0.6), "compare")
        plotext.build()
        cpu.append((time.process_time() - c) * 1000)
    return {"cpu_median": statistics.median(cpu), "runs": runs, "generations": gens}


def run(args: argparse.Namespace) -> int:
    """`minertui bench` (its flags are parsed by `minertui.__main__`)."""
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="minertui-bench-"))
    try:
        small = base / "small" / "runs"
        make_run(small / "run-a", generations=30, planned=60)
        ff = first_frame_s(small)
        (base / "config-system" / "minertui").mkdir(parents=True, exist_ok=True)
        (base / "config-system" / "minertui" / "settings.json").write_text('{"system_pane": true}')
        ff_sys = first_frame_s(
            small, argv=("open", str(small / "run-a")), until=b"system", config=base / "config-system"
        )
        ff_train = first_frame_s(small, argv=("open", str(small / "run-a")), until=b"routing mix")
        big = base / "big" / "runs" / "run-big"
        t = time.perf_counter()
        make_run(big, generations=GENS, planned=GENS * 2, traces_per_gen=TRACES // GENS, calls_per_gen=1)
        write_s = time.perf_counter() - t
        rc = asyncio.run(refresh_costs(big))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    figures = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "first_frame_s": {"median": statistics.median(ff), "runs": ff},
        "history": {"generations": GENS, "traces": TRACES, "write_s": write_s, "load_s": rc["load_s"]},
        "refresh_ms_train": rc["refresh_ms_train"],
        "refresh_ms_traces": rc["refresh_ms_traces"],
        "first_frame_s_train_system_pane": {"median": statistics.median(ff_sys), "runs": ff_sys},
        "first_frame_s_train": {"median": statistics.median(ff_train), "runs": ff_train},
        "refresh_ms_train_system_pane": rc["refresh_ms_train+system"],
        "system_sample_ms": system_sample_ms(),
        "idle_refresh_ms": rc["idle_refresh_ms"],
        "filter_ms_100k_traces": {**rc["filter_ms"], "screen": rc["filter_redraw_ms"]},
        "overlay_ms_8x10k": overlay_ms(),
        "load_avg_1m": os.getloadavg()[0],
        "memory_mb": {
            "rss_with_100k_traces": rc["rss_mb"],
            "rss_before_load": rc["rss_before_load_mb"],
            "run_columns": rc["columns_mb"],
        },
        "targets": {"first_frame_s": 0.5, "refresh_ms": 50, "memory_mb": 400, "overlay_ms": 50, "filter_ms": 200},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"first frame      {figures['first_frame_s']['median']:.2f} s (median of {len(ff)}; target < 0.5 s idle)")
        for m in ("train", "traces"):
            r = figures[f"refresh_ms_{m}"]
            print(
                f"refresh {m:<8} {r['median']:.1f} ms median, {r['max']:.1f} ms max, "
                f"{r['cpu_median']:.1f} ms CPU median "
                f"({GENS:,} generations, {TRACES:,} traces; target < 50 ms)"
            )
        fs, rs, ss = (
            figures["first_frame_s_train_system_pane"],
            figures["refresh_ms_train_system_pane"],
            figures["system_sample_ms"],
        )
        ft = figures["first_frame_s_train"]
        print(
            f"first frame      {fs['median']:.2f} s, Train with the system pane on; {ft['median']:.2f} s without "
            f"(medians of {len(fs['runs'])})"
        )
        print(
            f"refresh train+y  {rs['median']:.1f} ms median, {rs['cpu_median']:.1f} ms CPU median (system pane on; "
            "target < 50 ms)"
        )
        print(f"system sample    {ss['median']:.2f} ms median ({ss['gpus']} GPUs; in the reader thread, 1/s)")
        print(f"idle refresh     {figures['idle_refresh_ms']:.1f} ms")
        f, o = figures["filter_ms_100k_traces"], figures["overlay_ms_8x10k"]
        print(
            f"filter           {f['cpu_median']:.1f} ms CPU over {f['traces']:,} traces; typed in Traces "
            f"to the redrawn page {f['screen']['median']:.0f} ms ({f['screen']['cpu_median']:.0f} ms CPU; "
            "target < 200 ms)"
        )
        print(
            f"overlay redraw   {o['cpu_median']:.1f} ms CPU, {o['runs']} runs × {o['generations']:,} "
            "generations (target < 50 ms)"
        )
        print(f"load average     {figures['load_avg_1m']:.2f} (1 min; the box is shared)")
        mem = figures["memory_mb"]
        print(
            f"memory           {mem['rss_with_100k_traces']:.0f} MB RSS with {TRACES:,} traces "
            f"(columns {mem['run_columns']:.1f} MB; target < 400 MB)"
        )
    return 0
