"""The system pane (Train, `y`) and the sampler behind it: NVML through a stand-in `pynvml`
module put on sys.path (our code is not patched), a broken one, and none."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from minertui.app import MinerApp
from minertui.reader import Reader
from minertui.synth import make_run
from trinity.runs.system import NO_NVML, SystemSampler, rss_of

FAKE_NVML = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"


@pytest.fixture
def fake_nvml(monkeypatch):
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.syspath_prepend(str(FAKE_NVML))


@pytest.fixture
def no_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError


def _broken(tmp_path, monkeypatch, body: str) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "pynvml.py").write_text(body)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.syspath_prepend(str(d))


def test_gpus_from_nvml(fake_nvml, tmp_path):
    s = SystemSampler(tmp_path).sample(os.getpid())
    g0, g1 = s["gpus"]
    assert (g0["util"], g0["mem_used"], g0["mem_total"], g0["temp"], g0["power_w"]) == (
        87,
        10 * 2**30,
        80 * 2**30,
        71,
        350.0,
    )
    assert g0["name"] == "NVIDIA H100 80GB HBM3" and g1["util"] == 12 and "gpu_note" not in s
    assert s["rss"] == rss_of(os.getpid()) or abs(s["rss"] - rss_of(os.getpid())) < 64 << 20
    assert s["disk_free"] > 0 and s["ram_total"] >= s["ram_used"] > 0


def test_no_nvml_is_one_clear_line(no_nvml, tmp_path):
    s = SystemSampler(tmp_path).sample()
    assert s["gpus"] == [] and s["gpu_note"] == NO_NVML


def test_a_broken_nvml_module_is_a_line_not_a_crash(tmp_path, monkeypatch):
    _broken(tmp_path, monkeypatch, "raise OSError('libnvidia-ml.so.1: cannot open shared object file')\n")
    s = SystemSampler(tmp_path).sample()
    assert s["gpus"] == [] and "NVML could not be loaded" in s["gpu_note"] and "libnvidia-ml" in s["gpu_note"]


def test_nvml_without_a_driver(tmp_path, monkeypatch):
    _broken(
        tmp_path,
        monkeypatch,
        "class NVMLError(Exception):\n    pass\ndef nvmlInit():\n    raise NVMLError('Driver Not Loaded')\n",
    )
    s = SystemSampler(tmp_path).sample()
    assert s["gpus"] == [] and "NVML did not start" in s["gpu_note"] and "Driver Not Loaded" in s["gpu_note"]


def test_cpu_percent_from_two_samples():
    sm = SystemSampler()
    assert sm.cpu_percent() is None  # the first call has nothing to compare with
    x = 0
    for i in range(3_000_000):  # burn a little CPU so the counters move
        x += i
    pct = sm.cpu_percent()
    assert pct is None or 0.0 <= pct <= 100.0


def test_the_reader_samples_in_its_thread_only_when_asked(fake_nvml, tmp_path):
    make_run(tmp_path / "r1")
    reader = Reader(tmp_path)
    assert reader.poll().system == ()  # the pane is not shown: nothing sampled
    reader.want_system = True
    got = []
    th = threading.Thread(target=lambda: got.append(reader.poll()))
    th.start()
    th.join()
    (sample,) = got[0].system
    assert sample["gpus"][0]["util"] == 87
    assert len(reader.poll().system) == 1  # at most one sample a second


async def test_train_system_pane(fake_nvml, tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "gpubox", generations=12, planned=30, system=True).path
    app = MinerApp(runs_root=root, open_run=run, start_mode="train", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        await pilot.pause()
        await pilot.press("y")
        await app.refresh_now()
        await pilot.pause()
        text = str(app.screen.query_one("#train-mix").render())
        assert "GPU0  87%" in text and "GPU1  12%" in text and "10G/80G" in text
        assert "CPU" in text and "RAM" in text and "disk" in text
        # per generation: time against the GPU utilisation the engine recorded
        from minertui.synth import system_sample

        last = system_sample(12, 0)["gpus"]
        mean = sum(g["util"] for g in last) / len(last)
        assert "s/gen" in text and f"{mean:.0f}%" in text.split("GPU %")[1]
        await pilot.press("y")
        await app.refresh_now()
        await pilot.pause()
        assert "GPU0" not in str(app.screen.query_one("#train-mix").render())


async def test_train_system_pane_without_a_gpu(no_nvml, tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "cpubox", generations=3, planned=30).path
    app = MinerApp(runs_root=root, open_run=run, start_mode="train", poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.refresh_now()
        await pilot.press("y")
        await app.refresh_now()
        await pilot.pause()
        text = str(app.screen.query_one("#train-mix").render())
        assert "no GPU: nvidia-ml-py is not installed" in text
        assert "no GPU in the engine's samples" in text
