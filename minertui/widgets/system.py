"""The system pane (Train, `y`): this box's GPUs, CPU, RAM, the engine's memory and the free
disk, with a short history, and per generation its time against GPU utilisation (from the
samples the engine recorded in its events). Pure text: the samples come from the reader thread
(trinity.runs.system), never sampled on the UI thread."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from rich.text import Text

if TYPE_CHECKING:
    from minertui.runmodel import RunSnapshot

SPARK = "▁▂▃▄▅▆▇█"


def spark(ys: Sequence[float | None], width: int, lo: float | None = None, hi: float | None = None) -> str:
    """The last `width` values as block characters (missing ones as spaces); scaled to lo..hi
    when given (a percentage: 0..100), else to their own range."""
    ys = list(ys)[-max(1, width) :]
    good = [y for y in ys if y is not None and math.isfinite(y)]
    if not good:
        return ""
    a = min(good) if lo is None else lo
    b = max(good) if hi is None else hi
    span = b - a
    out = []
    for y in ys:
        if y is None or not math.isfinite(y):
            out.append(" ")
        else:
            f = (y - a) / span if span > 0 else 0.5
            out.append(SPARK[max(0, min(len(SPARK) - 1, int(round(f * (len(SPARK) - 1)))))])
    return "".join(out)


def gib(b: Any) -> str:
    return f"{b / 2**30:.1f}" if isinstance(b, (int, float)) else "—"


def gb(b: Any) -> str:
    """Bytes as a short GiB figure: 10.2G, 251G."""
    if not isinstance(b, (int, float)):
        return "—"
    g = b / 2**30
    return f"{g:.1f}G" if g < 10 else f"{g:.0f}G"


def system_text(samples: Sequence[dict[str, Any]], snap: RunSnapshot | None, width: int = 34) -> Text:
    """One short line per fact, each within `width` (the side pane at 80 columns is ~34 wide)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("system", style="bold")
    t.append(" this box · 1 s samples\n", style="dim")
    if not samples:
        t.append("sampling…\n", style="dim")
        return t
    last = samples[-1]
    hw = max(3, min(24, width - 28))  # history columns left beside the figures
    gpus = last.get("gpus") or []
    for g in gpus:
        i = g.get("index", 0)
        util, temp, power = g.get("util"), g.get("temp"), g.get("power_w")
        t.append(f"GPU{i} ", style="bold")
        t.append(f"{util if util is not None else '—':>3}% ", style="green")
        t.append(spark([_gpu(s, i, "util") for s in samples], hw, 0, 100).ljust(hw), style="green")
        t.append(f" {gb(g.get('mem_used'))}/{gb(g.get('mem_total'))}")
        t.append(f" {temp if temp is not None else '—'}°")
        t.append(f" {power:.0f}W" if isinstance(power, (int, float)) else " —W")
        t.append("\n")
    if gpus and gpus[0].get("name") and width >= 40:
        t.append(f"     {gpus[0]['name']}\n", style="dim")
    if not gpus:
        t.append(str(last.get("gpu_note") or "no GPU") + "\n", style="yellow")
    cpu = last.get("cpu")
    t.append("CPU  ", style="bold")
    t.append(f"{cpu:>3.0f}% " if isinstance(cpu, (int, float)) else "  —% ")
    t.append(spark([s.get("cpu") for s in samples], hw, 0, 100).ljust(hw), style="magenta")
    t.append(f" RAM {gb(last.get('ram_used'))}/{gb(last.get('ram_total'))}\n")
    rss = last.get("rss")
    t.append("engine ", style="bold")
    t.append(f"{gb(rss)} RSS" if rss else "—")
    t.append(" · disk ", style="bold")
    t.append(f"{gb(last.get('disk_free'))} free\n")
    if snap is not None and len(snap.gens):
        secs, util = snap.gens.secs, snap.gens.gpu_util
        n = min(max(4, width - 14), len(secs))
        t.append("s/gen ", style="dim")
        t.append(spark([float(x) for x in secs[-n:]], n) + f" {float(secs[-1]):.1f}s\n")
        t.append("GPU % ", style="dim")
        if any(math.isfinite(float(u)) for u in util[-n:]):
            last_u = float(util[-1])
            t.append(
                spark([float(x) for x in util[-n:]], n, 0, 100) + (f" {last_u:.0f}%" if math.isfinite(last_u) else "")
            )
        else:
            t.append("— (no GPU in the engine's samples)", style="dim")
    return t


def _gpu(sample: dict[str, Any], i: int, key: str) -> float | None:
    for g in sample.get("gpus") or ():
        if g.get("index") == i:
            v = g.get(key)
            return float(v) if isinstance(v, (int, float)) else None
    return None


def _mem_frac(sample: dict[str, Any], i: int) -> float | None:
    used, total = _gpu(sample, i, "mem_used"), _gpu(sample, i, "mem_total")
    return 100.0 * used / total if used is not None and total else None
