"""A `generation` event's system sample is typed (`SystemSample`, its GPUs `GpuReading`): the
engine's sample (the dict `trinity.runs.system` makes) reads by attribute, an event written
before the record existed still reads, and the line written keeps its bytes."""

from __future__ import annotations

import json

import pytest

from minertui.runmodel import gpu_util_of
from minertui.synth import system_sample
from trinity.io import append_jsonl, read_jsonl
from trinity.runs import records as R
from trinity.runs.rundir import RunDir
from trinity.runs.system import engine_sample

GEN = {"gen": 1, "best": 0.5, "mean": 0.25, "max": 0.5, "evals": 8}


def _event(system):
    return {"type": "generation", "time": 1700000000.125, **GEN, "system": system}


@pytest.mark.parametrize(
    "system",
    [
        system_sample(3, 1.7e9),  # two GPUs, as the synthetic runs write it
        engine_sample("/tmp"),  # this box (no GPU here: a gpu_note)
        # an older or foreign writer's extra fields, an integer where a float is usual
        {"time": 5, "gpus": [{"index": 0, "util": 12.5, "fan": 40}], "cpu": 7, "load": [1.0, 0.5]},
        {},
    ],
)
def test_the_event_line_keeps_its_bytes(tmp_path, system):
    ev = _event(system)
    typed = R.parse_event(ev)
    assert isinstance(typed, R.GenerationEvent) and isinstance(typed.system, R.SystemSample)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    append_jsonl(a, ev)
    append_jsonl(b, typed.to_json())  # what `RunDir.append_event` writes
    assert a.read_bytes() == b.read_bytes()
    assert typed.record().to_json() == GEN  # never in history.json


def test_the_writer_path_writes_the_sample_as_given(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    sample = system_sample(4, 1.7e9)
    written = run.append_event("generation", **GEN, system=sample)
    line = run.events.read_text(encoding="utf-8")
    assert json.loads(line)["system"] == sample
    assert line == json.dumps({"type": "generation", "time": written["time"], **GEN, "system": sample}) + "\n"
    assert read_jsonl(run.events)[0]["system"] == sample


def test_an_old_dict_shaped_event_reads_by_attribute():
    old = _event(
        {
            "time": 1.7e9,
            "gpus": [
                {"index": 0, "name": "A100", "util": 80, "mem_used": 10, "mem_total": 40, "temp": 60, "power_w": 250.0},
                {"index": 1, "name": "A100", "util": None, "mem_used": None, "mem_total": None},
            ],
            "cpu": 35.5,
            "ram_used": 1,
            "ram_total": 2,
            "rss": 3,
            "disk_free": 4,
        }
    )
    ev = R.parse_event(old)
    assert isinstance(ev, R.GenerationEvent) and ev.system is not None
    s = ev.system
    assert [g.util for g in s.gpus] == [80, None] and s.gpus[0].name == "A100" and s.gpus[0].power_w == 250.0
    assert (s.cpu, s.ram_used, s.ram_total, s.rss, s.disk_free, s.gpu_note) == (35.5, 1, 2, 3, 4, None)
    assert s.gpu_util == 80.0 == gpu_util_of(s)
    no_gpu = R.parse_event(_event({"gpus": [], "gpu_note": "no GPU"}))
    assert isinstance(no_gpu, R.GenerationEvent) and gpu_util_of(no_gpu.system) is None
    bare = R.parse_event({k: v for k, v in old.items() if k != "system"})
    assert isinstance(bare, R.GenerationEvent) and bare.system is None and gpu_util_of(bare.system) is None


def test_a_sample_that_is_not_one_is_one_line():
    with pytest.raises(R.RecordError) as e:
        R.parse_event(_event({"gpus": "none"}))
    assert "\n" not in str(e.value) and "system.gpus" in str(e.value)
