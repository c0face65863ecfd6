"""The sandbox as an ordinary user: the grader itself runs under an unused uid.

Most miners' boxes run us as root, this one too; a user without root gets unprivileged
bubblewrap (`--unshare-all`) or, without it, a plain child whose process limit counts that
user's own tasks. This runs the real grader as such a user, in a child process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER = 1_799_999_999  # below the sandbox's throw-away range


def _python_for_others() -> str | None:
    """An interpreter (3.11+) that an unprivileged user can run."""
    from trinity.grading.sandbox import _hidden_from_others

    for exe in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if not exe or not os.path.exists(exe) or _hidden_from_others(os.path.realpath(exe)):
            continue
        ok = subprocess.run([exe, "-c", "import sys; assert sys.version_info >= (3, 11)"], capture_output=True)
        if ok.returncode == 0:
            return exe
    return None


SCRIPT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, sys.argv[1])
    from trinity.grading.code import grade_code_run
    from trinity.grading.sandbox import bwrap_status, describe_layers
    SUM = {"tests": [{"input": "2 3\\n", "output": "5\\n", "testtype": "stdin"}]}
    BOMB = ("import os\\nmade = 0\\nfor _ in range(3000):\\n    try:\\n        if os.fork() == 0:\\n"
            "            import time; time.sleep(30); os._exit(0)\\n        made += 1\\n"
            "    except OSError:\\n        pass\\nprint(5 if made >= 3000 else made)")
    out = {"bwrap": bwrap_status()[0], "layers": describe_layers(), "runs": {}}
    for use in ([True] if out["bwrap"] else []) + [False]:
        for name, code in (("right", "a, b = map(int, input().split())\\nprint(a + b)"),
                           ("loop", "while True: pass"), ("bomb", BOMB)):
            t = time.monotonic()
            v, run = grade_code_run(code, SUM, per_test_timeout=1.5, problem_timeout=5, use_bwrap=use)
            out["runs"][f"{'bwrap' if use else 'plain'}-{name}"] = {
                "correct": v.correct, "reason": v.reason, "layers": run.layers, "secs": time.monotonic() - t}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def as_user(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an ordinary user; as an ordinary user the other sandbox tests are this")
    exe = _python_for_others()
    if exe is None:
        pytest.skip("no Python 3.11+ that an ordinary user can run on this machine")
    if _hidden_for_user(ROOT):
        pytest.skip(f"{ROOT} is not readable by other users")
    home = tmp_path_factory.mktemp("user-home")
    os.chmod(home, 0o777)
    try:
        done = subprocess.run(
            [exe, "-c", SCRIPT, str(ROOT)],
            user=USER,
            group=USER,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "HOME": str(home), "OPENROUTER_API_KEY": "sk-test"},
            cwd=home,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except PermissionError:
        pytest.skip("root here cannot switch users (no CAP_SETUID)")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _hidden_for_user(path: Path) -> bool:
    from trinity.grading.sandbox import _hidden_from_others

    return _hidden_from_others(str(path))


def test_layers_say_what_an_ordinary_user_gets(as_user):
    layers = {name: (active, note) for name, active, note in as_user["layers"]}
    assert layers["throw-away uid"][0] is False and "your uid" in layers["throw-away uid"][1]
    assert layers["bubblewrap"][0] is as_user["bwrap"]
    if not as_user["bwrap"]:
        assert "warning" in layers


def test_ordinary_user_grades_and_contains(as_user):
    runs = as_user["runs"]
    modes = (["bwrap"] if as_user["bwrap"] else []) + ["plain"]
    for mode in modes:
        assert runs[f"{mode}-right"]["correct"], runs[f"{mode}-right"]
        assert runs[f"{mode}-right"]["layers"]["uid"] == USER
        assert runs[f"{mode}-loop"]["reason"] == "test 1/1: per-test timeout"
        assert runs[f"{mode}-loop"]["secs"] < 10
        bomb = runs[f"{mode}-bomb"]
        assert not bomb["correct"] and bomb["reason"] == "test 1/1 failed: wrong output", bomb
    if as_user["bwrap"]:
        assert runs["bwrap-right"]["layers"]["netns"] is True  # --unshare-all


def test_nothing_of_the_ordinary_user_is_left_running(as_user):
    from trinity.grading.sandbox import _live_pids

    assert as_user["runs"]  # the grader ran
    # The grader waits until every process of the code's group has stopped running; a process
    # SIGKILLed while it was exiting may take a moment on a loaded box, so allow a short grace.
    deadline = time.monotonic() + 5.0
    while (left := _live_pids(USER)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, {pid: _state(pid) for pid in left}


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            return " ".join(line.strip() for line in f if line.startswith(("Name:", "State:", "PPid:")))
    except OSError:
        return "gone"
