"""The hash-chained ledger: tamper evidence, torn tails, resume, the `trinity ledger` CLI."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trinity.errors import InputError, RunLockedError
from trinity.pool.ledger import GENESIS, Ledger, verify_ledger

MODELS = ("simulated/mathlete", "simulated/scholar", "simulated/coder")


def _fill(path: Path, n: int, *, fsync: bool = False, run_id: str = "run-a") -> Ledger:
    led = Ledger(path, run_id, fsync=fsync)
    for i in range(n):
        led.append(
            provider="practice",
            model=MODELS[i % 3],
            prompt_tokens=100 + i,
            completion_tokens=7 * i,
            cost_micro_usd=11 * i + 3,
            cost_source="reported" if i % 2 else "estimated",
            purpose=("train", "eval", "collect")[i % 3],
        )
    return led


@pytest.fixture(scope="module")
def small_ledger(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("led") / "ledger.jsonl"
    _fill(path, 12).close()
    return path.read_bytes()


def test_untouched_ledger_of_thousands_verifies(tmp_path):
    path = tmp_path / "ledger.jsonl"
    led = _fill(path, 3000)
    head, total = led.head_hash, led.total_micro_usd
    led.close()
    rep = verify_ledger(path, expected_head=head)
    assert rep.ok and rep.n_records == 3000 and not rep.torn_tail
    assert rep.total_micro_usd == total == sum(11 * i + 3 for i in range(3000))
    assert rep.per_model["simulated/mathlete"]["calls"] == 1000
    assert sum(b["micro_usd"] for b in rep.per_purpose.values()) == total
    assert list(rep.per_day.values())[0]["calls"] == 3000
    first = json.loads(path.read_text().splitlines()[0])
    assert first["prev_h"] == GENESIS and first["seq"] == 0 and first["run_id"] == "run-a"


def _check_detected(data: bytes, tmp_path: Path, head: str) -> None:
    p = tmp_path / "tampered.jsonl"
    p.write_bytes(data)
    rep = verify_ledger(p, expected_head=head)
    assert not rep.ok and rep.first_bad_line is not None, rep


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_changed_byte_is_detected(small_ledger, tmp_path, data):
    pos = data.draw(st.integers(0, len(small_ledger) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != small_ledger[pos]))
    tampered = small_ledger[:pos] + bytes([new]) + small_ledger[pos + 1 :]
    head = json.loads(small_ledger.splitlines()[-1])["h"]
    _check_detected(tampered, tmp_path, head)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_deleted_or_swapped_lines_are_detected(small_ledger, tmp_path, data):
    lines = small_ledger.splitlines(keepends=True)
    head = json.loads(lines[-1])["h"]
    i = data.draw(st.integers(0, len(lines) - 1))
    deleted = b"".join(lines[:i] + lines[i + 1 :])
    _check_detected(deleted, tmp_path, head)
    j = data.draw(st.integers(0, len(lines) - 1).filter(lambda x: x != i))
    swapped = list(lines)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    _check_detected(b"".join(swapped), tmp_path, head)


def test_first_bad_line_is_named(tmp_path, small_ledger):
    lines = small_ledger.splitlines(keepends=True)
    rec = json.loads(lines[4])
    rec["cost_micro_usd"] += 1
    lines[4] = (json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n").encode()
    p = tmp_path / "l.jsonl"
    p.write_bytes(b"".join(lines))
    rep = verify_ledger(p)
    assert not rep.ok and rep.first_bad_line == 5 and "hash mismatch" in rep.problem
    assert rep.n_records == 4
    # a line cut short in the middle of the file is tampering, not a torn tail
    p.write_bytes(b"".join(lines[:3]) + lines[3][:40] + b"\n" + b"".join(lines[4:]))
    rep = verify_ledger(p)
    assert not rep.ok and rep.first_bad_line == 4


def test_torn_tail_is_reported_not_tampering_and_resume_continues(tmp_path, small_ledger):
    lines = small_ledger.splitlines(keepends=True)
    p = tmp_path / "ledger.jsonl"
    p.write_bytes(small_ledger + lines[0][:57])  # a crash mid-append
    rep = verify_ledger(p)
    assert rep.ok and rep.torn_tail and rep.torn_bytes == 57 and rep.n_records == 12
    led = Ledger(p, "run-a")
    assert led.recovered_torn_tail and led.n_records == 12
    rec = led.append(
        provider="practice",
        model=MODELS[0],
        prompt_tokens=1,
        completion_tokens=1,
        cost_micro_usd=5,
        cost_source="estimated",
        purpose="train",
    )
    led.close()
    assert rec["seq"] == 12 and rec["prev_h"] == rep.head_hash
    rep2 = verify_ledger(p, expected_head=rec["h"])
    assert rep2.ok and rep2.n_records == 13 and not rep2.torn_tail
    assert (tmp_path / "ledger.jsonl.torn").read_bytes() == lines[0][:57] + b"\n"


def test_reopen_refuses_a_tampered_ledger_and_a_second_writer(tmp_path, small_ledger):
    p = tmp_path / "ledger.jsonl"
    lines = small_ledger.splitlines(keepends=True)
    p.write_bytes(b"".join(lines[:3] + lines[4:]))
    with pytest.raises(InputError, match="broken at line 4"):
        Ledger(p, "run-a")
    q = tmp_path / "ok.jsonl"
    first = Ledger(q, "run-a")
    with pytest.raises(RunLockedError):
        Ledger(q, "run-a")
    first.close()
    Ledger(q, "run-a").close()


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`trinity …` in-process (the same `main()` the console script runs; a subprocess per call
    costs ~1 s of start-up on a busy machine)."""
    from trinity.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


def test_cli_verify_and_report(tmp_path, small_ledger):
    p = tmp_path / "ledger.jsonl"
    p.write_bytes(small_ledger)
    out = _cli("ledger", "verify", str(p))
    assert out.returncode == 0 and "OK — 12 records" in out.stdout
    total = sum(11 * i + 3 for i in range(12))
    assert f"${total / 1e6:.6f}" in out.stdout
    rep = json.loads(_cli("ledger", "report", str(p), "--json").stdout)
    assert rep["total_micro_usd"] == total and rep["per_model"]["simulated/coder"]["calls"] == 4
    assert set(rep["per_purpose"]) == {"train", "eval", "collect"} and len(rep["per_day"]) == 1
    lines = small_ledger.splitlines(keepends=True)
    lines[6], lines[7] = lines[7], lines[6]
    p.write_bytes(b"".join(lines))
    out = _cli("ledger", "verify", str(p))
    assert out.returncode == 1 and "BROKEN at line 7" in out.stdout
    head = json.loads(small_ledger.splitlines()[-1])["h"]
    p.write_bytes(b"".join(small_ledger.splitlines(keepends=True)[:-1]))
    assert _cli("ledger", "verify", str(p)).returncode == 0  # without the head, an end cut is invisible …
    out = _cli("ledger", "verify", str(p), "--head", head)
    assert out.returncode == 1 and "BROKEN at line 12" in out.stdout  # … with it, it is named
    out = _cli("ledger", "verify", str(tmp_path / "missing.jsonl"))
    assert out.returncode == 2 and out.stderr.startswith("error: ledger not found")


@pytest.mark.parametrize("byte", [b" ", b"\t", b"\r", b"}", b"x", b"\x00"])
def test_changing_the_final_newline_is_tampering_not_a_torn_tail(tmp_path, small_ledger, byte):
    p = tmp_path / "l.jsonl"
    p.write_bytes(small_ledger[:-1] + byte)
    rep = verify_ledger(p)
    assert not rep.ok and rep.first_bad_line == 12 and not rep.torn_tail


def test_recorded_head_catches_an_end_cut_but_not_a_resumed_append(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    led = _fill(run / "ledger.jsonl", 6)
    (run / "summary.json").write_text(json.dumps({"ledger_head": led.head_hash}))
    led.append(
        provider="practice",
        model=MODELS[0],
        prompt_tokens=1,
        completion_tokens=1,
        cost_micro_usd=1,
        cost_source="estimated",
        purpose="eval",
    )  # appended after the summary: fine
    led.close()
    assert _cli("ledger", "verify", str(run / "ledger.jsonl")).returncode == 0
    assert _cli("ledger", "verify", str(run)).returncode == 0  # a run directory works too
    lines = (run / "ledger.jsonl").read_bytes().splitlines(keepends=True)
    (run / "ledger.jsonl").write_bytes(b"".join(lines[:5]))
    out = _cli("ledger", "verify", str(run / "ledger.jsonl"))
    assert out.returncode == 1 and "BROKEN at line 6" in out.stdout and "recorded head" in out.stdout


def test_a_complete_last_record_without_its_newline_is_kept_and_continued(tmp_path, small_ledger):
    p = tmp_path / "ledger.jsonl"
    p.write_bytes(small_ledger[:-1])  # the crash hit between the record and its "\n"
    rep = verify_ledger(p)
    assert rep.ok and rep.n_records == 12 and rep.missing_final_newline and not rep.torn_tail
    led = Ledger(p, "run-a")
    rec = led.append(
        provider="practice",
        model=MODELS[1],
        prompt_tokens=2,
        completion_tokens=3,
        cost_micro_usd=4,
        cost_source="reported",
        purpose="collect",
    )
    led.close()
    rep = verify_ledger(p, expected_head=rec["h"])
    assert rep.ok and rep.n_records == 13 and rec["seq"] == 12
