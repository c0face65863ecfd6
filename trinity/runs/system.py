"""System metrics of the box a run trains on: per GPU utilisation, memory, temperature and power
(NVML, through the optional `nvidia-ml-py` package, imported only when present), CPU, RAM, the
engine process's resident memory and the free disk under the runs directory.

No psutil: CPU and memory come from /proc (Linux, what a rented GPU box runs); elsewhere those
fields are None. One `SystemSampler` per reader keeps the previous /proc/stat counters (CPU % is a
difference between two samples) and the NVML handles. A sample is a plain JSON-able dict, the
shape the engine records in each `generation` event under "system":

  {"time", "gpus": [{"index", "name", "util", "mem_used", "mem_total", "temp", "power_w"}],
   "gpu_note": "no GPU: …" (when there is no GPU list), "cpu": %, "ram_used", "ram_total",
   "rss": bytes of `pid`, "disk_free": bytes}
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

NO_NVML = "no GPU: nvidia-ml-py is not installed (pip install nvidia-ml-py)"


class SystemSampler:
    def __init__(self, disk_path: str | os.PathLike[str] | None = None):
        self.disk_path = Path(disk_path) if disk_path is not None else None
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._gpu_note = ""
        self._nvml_tried = False
        self._cpu_prev: tuple[int, int] | None = None

    # ---- GPUs ------------------------------------------------------------------------------
    def _init_nvml(self) -> None:
        self._nvml_tried = True
        try:
            # lazy: a missing module is reported, not raised at import
            import pynvml  # the nvidia-ml-py package
        except ImportError:
            self._gpu_note = NO_NVML
            return
        except Exception as e:  # noqa: BLE001 — a broken install must not break the reader
            self._gpu_note = f"no GPU: NVML could not be loaded ({type(e).__name__}: {e})"[:200]
            return
        try:
            pynvml.nvmlInit()
            n = int(pynvml.nvmlDeviceGetCount())
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        except Exception as e:  # noqa: BLE001 — NVMLError (no driver, no device) or a broken module
            self._gpu_note = f"no GPU: NVML did not start ({type(e).__name__}: {e})"[:200]
            self._handles = []
            return
        self._nvml = pynvml
        if not self._handles:
            self._gpu_note = "no GPU: NVML sees no device"

    def gpus(self) -> list[dict[str, Any]]:
        if not self._nvml_tried:
            self._init_nvml()
        nv = self._nvml
        out: list[dict[str, Any]] = []
        if nv is None:
            return out
        for i, h in enumerate(self._handles):
            out.append(_gpu_reading(nv, i, h))
        return out

    # ---- CPU, memory, disk -----------------------------------------------------------------
    def cpu_percent(self) -> float | None:
        """Busy share of all CPUs since the previous call (None on the first call or without /proc)."""
        try:
            with open("/proc/stat", "rb") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        total = sum(fields[:8])
        prev, self._cpu_prev = self._cpu_prev, (idle, total)
        if prev is None or total <= prev[1]:
            return None
        return round(100.0 * (1.0 - (idle - prev[0]) / (total - prev[1])), 1)

    def sample(self, pid: int | None = None) -> dict[str, Any]:
        s: dict[str, Any] = {"time": round(time.time(), 3), "gpus": self.gpus()}
        if not s["gpus"]:
            s["gpu_note"] = self._gpu_note or "no GPU"
        s["cpu"] = self.cpu_percent()
        s.update(_meminfo())
        s["rss"] = rss_of(pid) if pid else None
        s["disk_free"] = None
        if self.disk_path is not None:
            try:
                s["disk_free"] = shutil.disk_usage(self.disk_path).free
            except OSError:
                pass
        return s


def _try(fn: Callable[..., T], *args: object) -> T | None:
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 — NVMLError_NotSupported and the like: that field is unknown
        return None


def _gpu_reading(nv: Any, i: int, h: Any) -> dict[str, Any]:
    """One GPU's figures; a field NVML cannot give (not supported on this board) is None."""
    name = _try(nv.nvmlDeviceGetName, h)
    util = _try(nv.nvmlDeviceGetUtilizationRates, h)
    mem = _try(nv.nvmlDeviceGetMemoryInfo, h)
    temp = _try(nv.nvmlDeviceGetTemperature, h, getattr(nv, "NVML_TEMPERATURE_GPU", 0))
    mw = _try(nv.nvmlDeviceGetPowerUsage, h)
    return {
        "index": i,
        "name": _text(name) if name is not None else None,
        "util": int(util.gpu) if util is not None else None,
        "mem_used": int(mem.used) if mem is not None else None,
        "mem_total": int(mem.total) if mem is not None else None,
        "temp": int(temp) if isinstance(temp, (int, float)) else None,
        "power_w": round(mw / 1000.0, 1) if isinstance(mw, (int, float)) else None,
    }


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _meminfo() -> dict[str, int | None]:
    got: dict[str, int] = {}
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                k, _, rest = line.partition(b":")
                if k in (b"MemTotal", b"MemAvailable"):
                    got[k.decode()] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    total, avail = got.get("MemTotal"), got.get("MemAvailable")
    return {"ram_total": total, "ram_used": total - avail if total is not None and avail is not None else None}


def rss_of(pid: int) -> int | None:
    """Resident memory of a process in bytes (VmRSS), None when it is gone or unreadable."""
    try:
        with open(f"/proc/{int(pid)}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


_ENGINE_SAMPLER: SystemSampler | None = None


def engine_sample(runs_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The engine's per-generation sample (its own RSS; the free disk where its run lives)."""
    global _ENGINE_SAMPLER
    if _ENGINE_SAMPLER is None or _ENGINE_SAMPLER.disk_path != Path(runs_dir):
        prev = _ENGINE_SAMPLER
        _ENGINE_SAMPLER = SystemSampler(runs_dir)
        if prev is not None:  # keep NVML and the CPU counters
            _ENGINE_SAMPLER.__dict__.update({k: v for k, v in prev.__dict__.items() if k != "disk_path"})
    return _ENGINE_SAMPLER.sample(os.getpid())
