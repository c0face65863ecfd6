"""`trinity collect` against a failing provider (issue 12): the hostile stand-in on 127.0.0.1 (real
HTTP) answers 500 (or 90% 429); collect stops with `stopped: provider failing (N of M calls
failed: …)`, exit non-zero, asks nothing more once it stopped, keeps what it had answered, and a
re-run once the provider is healthy asks only for the rest.

The runs read a copy of the providers file whose `local` pool backs off in milliseconds (`--models-yaml`):
the retries, the stop and the resume are the same, without half a second to ten seconds of sleep per
failing call."""

import json
import sys
from pathlib import Path

import pytest
from quick_providers import quick_providers

from trinity.cli import main
from trinity.io import read_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))
from hostile import HostileServer  # noqa: E402


@pytest.fixture
def hostile():
    h = HostileServer()
    yield h
    h.stop()


def _collect(h, out, n, *extra):
    return main(
        [
            "collect",
            "--models-yaml",
            str(quick_providers(out.parent / "models.yaml")),
            "--benchmark",
            "practice",
            "--pool",
            "local",
            "--base-url",
            h.base_url,
            "--models",
            "m-a,m-b",
            "--split",
            "all",
            "--n",
            str(n),
            "--k",
            "1",
            "--out",
            str(out),
            "--price-in",
            "1",
            "--price-out",
            "2",
            "--cache",
            str(out.parent / "c.db"),
            *extra,
        ]
    )


@pytest.mark.parametrize("mode", ["500", "429"])
def test_collect_stops_on_a_failing_pool_and_resumes(hostile, tmp_path, capsys, mode):
    out = tmp_path / "m.json"
    assert _collect(hostile, out, 2) == 0  # a healthy start: 2 questions x 2 models answered
    answers = tmp_path / "m.answers.jsonl"
    assert len(read_jsonl(answers)) == 4
    capsys.readouterr()

    hostile.mode = mode
    before = hostile.requests
    code = _collect(hostile, out, 40)  # 76 more cells to ask
    text = capsys.readouterr().out
    assert code == 4, text
    line = [x for x in text.splitlines() if x.startswith("stopped: ")]
    assert line and line[0].startswith("stopped: provider failing ("), text
    assert "calls failed: " in line[0] and f"{mode} ×" in line[0] and "re-run" in line[0], line[0]
    assert len(read_jsonl(answers)) >= 4  # the answers so far are kept (a 429 run may add a few)
    kept = len(read_jsonl(answers))
    # it stopped early: far fewer cells were tried than the 76 it lacked (each call retries a few times)
    tried = hostile.requests - before
    assert tried < 76, tried
    print(f"FIGURE mode={mode} tried={tried} kept={kept}", file=sys.stderr)

    hostile.mode = "ok"
    before = hostile.requests
    assert _collect(hostile, out, 40) == 0
    assert len(read_jsonl(answers)) == 80
    assert hostile.requests - before == 80 - kept  # only the missing cells were asked
    assert json.loads(out.read_text())


def test_collect_fail_threshold_is_checked(hostile, tmp_path, capsys):
    assert _collect(hostile, tmp_path / "m.json", 2, "--fail-threshold", "0") != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fail-threshold must be in (0, 1]" in err[0] and hostile.requests == 0
