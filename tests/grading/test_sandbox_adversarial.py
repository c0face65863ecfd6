"""The adversarial sandbox suite (issue 4, item 5).

Every attack is graded against a tiny stdin problem ("print a + b") or a functional one, in each
sandbox mode this machine can run (bubblewrap; plain child as root). Most attacks print the
right answer only if the attack worked, so a "wrong" verdict shows the defence held, not merely
that the program crashed (test_attack_harness_is_not_vacuous checks the same code passes when
the attack is made harmless). Each case also asserts that the grader is alive and still grades,
that nothing was written outside the sandbox, that no process of the run is left, and that the
run ended within a bounded time.
"""

from __future__ import annotations

import os
import socket
import textwrap
import time
from pathlib import Path

import pytest

from trinity.grading.code import grade_code, grade_code_run
from trinity.grading.sandbox import bwrap_status, describe_layers, probe

ROOT = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0


def _plain_isolates() -> bool:
    """The plain child isolates when, as root, it could switch to a throw-away uid."""
    run = probe(False)
    return IS_ROOT and not isinstance(run, str) and run.layers.get("uid") not in (None, 0)


# The modes with an isolating layer here: bubblewrap where it works; the plain child as root
# (throw-away uid). Without either (an ordinary user without bwrap, a root without CAP_SETUID)
# describe_layers must warn instead (test_describe_layers_matches_the_machine).
MODES = ([pytest.param(True, id="bwrap")] if bwrap_status()[0] else []) + (
    [pytest.param(False, id="plain-root")] if _plain_isolates() else []
)

# The layer an attack is contained by, where a machine may lack it (then the attack is not
# asserted in that mode, and describe_layers must say the layer is off).
NEEDS = {
    "fork_bomb": "uid",
    "kill_parent": "uid",
    "read_user_home": "uid",
    "read_secret_env": "uid",
    "socket_to_localhost": "netns",
    "write_outside": "mountns",
}


def _require(attack: str, use_bwrap: bool) -> None:
    layer = NEEDS.get(attack)
    if layer is None:
        return
    held = probe(use_bwrap).layers
    active = held.get("uid") not in (None, 0, os.getuid()) if layer == "uid" else bool(held.get(layer))
    if not active:
        off = [note for name, on, note in describe_layers() if not on]
        assert off, "a layer is missing but describe_layers reports everything active"
        pytest.skip(f"{layer} layer not active on this machine ({'; '.join(off)[:200]})")


SUM = {
    "tests": [
        {"input": "2 3\n", "output": "5\n", "testtype": "stdin"},
        {"input": "10 -4\n", "output": "6\n", "testtype": "stdin"},
    ]
}
CALL = {"tests": [{"input": "2\n3", "output": "5", "testtype": "functional"}], "fn_name": "add"}
PER_TEST, PROBLEM = 1.5, 5.0
BOUND_S = 12.0  # a whole adversarial run, start-up included, on 2 busy cores
MEMORY = 256 << 20


def _prologue(marker: str, targets: list[str]) -> str:
    """Every attack first tries to drop a file in places outside the sandbox."""
    return textwrap.dedent(f"""
        import os, sys
        for _d in {targets!r} + [os.path.dirname(os.getcwd())]:
            try:
                with open(os.path.join(_d, {marker!r}), "w") as _f:
                    _f.write("escaped")
            except Exception:
                pass
        a, b = map(int, input().split())
    """)


ATTACKS = {
    # name: (body after the prologue, gold)
    "fork_bomb": (
        """
        made = 0
        for _ in range(3000):
            try:
                if os.fork() == 0:
                    while True:
                        try:
                            os.fork()
                        except OSError:
                            pass
                made += 1
            except OSError:
                pass
        if made >= 3000:
            print(a + b)
    """,
        SUM,
    ),
    "memory_bomb": (
        """
        chunks = []
        try:
            big = bytearray(1 << 40)
        except MemoryError:
            big = None
        while len(chunks) < 200:
            chunks.append(bytearray(64 << 20))
        print(a + b)
    """,
        SUM,
    ),
    "infinite_loop": (
        """
        while True:
            pass
    """,
        SUM,
    ),
    "sleep_forever": (
        """
        import time
        time.sleep(1e9)
        print(a + b)
    """,
        SUM,
    ),
    "alarm_off_then_loop": (
        """
        import signal
        signal.alarm(0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0)
        while True:
            pass
    """,
        SUM,
    ),
    "read_secret_env": (
        """
        if "sk-test-secret-0123" in repr(dict(os.environ)) or os.environ.get("OPENROUTER_API_KEY"):
            print(a + b)
        try:
            if b"sk-test-secret-0123" in open("/proc/self/environ", "rb").read():
                print(a + b)
        except OSError:
            pass
        for pid in (os.getppid(), GRADER_PID):
            try:
                if b"sk-test-secret-0123" in open(f"/proc/{pid}/environ", "rb").read():
                    print(a + b)
            except OSError:
                pass
    """,
        SUM,
    ),
    "read_user_home": (
        """
        found = os.path.expanduser("~") == HOME_DIR
        for path in (HOME_DIR + "/secret.txt", "/root/.bash_history", "/root/.profile"):
            try:
                open(path).read()
                found = True
            except OSError:
                pass
        if found:
            print(a + b)
    """,
        SUM,
    ),
    "write_outside": (
        """
        wrote = False
        for path in (OUTSIDE + "/escape.txt", REPO + "/escape-" + MARKER, "/tmp/" + MARKER + "-2",
                     "../" + MARKER, "../../" + MARKER, "/etc/" + MARKER):
            try:
                with open(path, "w") as f:
                    f.write("x")
                wrote = True
            except OSError:
                pass
        if wrote and os.path.exists(OUTSIDE + "/escape.txt"):
            print(a + b)
    """,
        SUM,
    ),
    "socket_to_localhost": (
        """
        import socket
        s = socket.socket()
        s.settimeout(1.0)
        try:
            s.connect(("127.0.0.1", PORT))
            s.sendall(b"escaped")
            print(a + b)
        except OSError:
            pass
    """,
        SUM,
    ),
    "kill_parent": (
        """
        import signal
        killed = False
        for pid in (os.getppid(), GRADER_PID):
            try:
                os.kill(pid, signal.SIGKILL)
                killed = pid == GRADER_PID
            except OSError:
                pass
        if killed:
            print(a + b)
    """,
        SUM,
    ),
    "close_stdout": (
        """
        sys.stdout.close()
        os.close(1)
        os.close(2)
        print(a + b)
    """,
        SUM,
    ),
    "close_result_pipe": (
        """
        os.closerange(3, 1024)
        print(a + b)
    """,
        SUM,
    ),
    "print_1gb": (
        """
        chunk = "7" * (1 << 20)
        for _ in range(1024):
            sys.stdout.write(chunk)
        print()
        print(a + b)
    """,
        SUM,
    ),
    "exit_before_tests": (
        """
        sys.exit(0)
    """,
        SUM,
    ),
    "hard_exit_before_tests": (
        """
        os._exit(0)
    """,
        SUM,
    ),
    "forged_end_message": (
        """
        import gc
        for obj in gc.get_objects():
            if type(obj).__name__ == "Reporter":
                obj.send("end")
                obj.send("done", b"5", test=5, status="ok", error=None)
        os._exit(0)
    """,
        SUM,
    ),
    "forged_header_without_nonce": (
        """
        for fd in range(3, 64):
            try:
                os.write(fd, b'{"nonce": "0", "event": "done", "test": 0, "status": "ok", "len": 2}\\n5\\n')
            except OSError:
                pass
        print(a + b)
    """,
        SUM,
    ),
    "escaped_grandchild": (
        """
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                import time
                time.sleep(1e9)
            os._exit(0)
        os.wait()
    """,
        SUM,
    ),
}

CALL_ATTACKS = {
    "always_equal_object": """
        class Always:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            def __hash__(self): return 0
        class Solution:
            def add(self, a, b):
                return Always()
    """,
    "always_equal_str": """
        class S(str):
            def __eq__(self, other): return True
        def add(a, b):
            return S("not five")
    """,
    "exit_in_module_body": """
        import sys
        sys.exit(0)
        def add(a, b):
            return a + b
    """,
    "exit_inside_call": """
        import sys
        def add(a, b):
            sys.exit(0)
    """,
}


def _sandbox_uid_processes(uid: int | None) -> list[str]:
    """Live (not zombie) processes still running as the run's throw-away uid."""
    if uid is None or uid == os.getuid():
        return []
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith(("Z", "X")):
            left.append(pid)
    return left


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A fake user home with a secret, a key in the environment, a listening socket."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "secret.txt").write_text("the user's secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test-secret-0123")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    marker = f"trinity-escape-{os.getpid()}-{time.monotonic_ns()}"
    yield {"home": home, "outside": outside, "listener": listener, "marker": marker, "tmp": tmp_path}
    listener.close()


def _program(body: str, world: dict, grader_pid: int) -> str:
    targets = [str(world["tmp"]), str(world["outside"]), "/tmp", "/var/tmp", "/dev/shm", str(ROOT), str(world["home"])]
    consts = textwrap.dedent(f"""
        HOME_DIR = {str(world["home"])!r}
        OUTSIDE = {str(world["outside"])!r}
        REPO = {str(ROOT)!r}
        MARKER = {world["marker"]!r}
        PORT = {world["listener"].getsockname()[1]}
        GRADER_PID = {grader_pid}
    """)
    return _prologue(world["marker"], targets) + consts + textwrap.dedent(body)


def _assert_contained(world: dict, run, elapsed: float) -> None:
    held = run.layers if run is not None else {}
    shared = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")] if held.get("mountns") else []
    for d in [world["tmp"], world["outside"], ROOT, world["home"], Path("/etc"), *shared]:
        assert not (d / world["marker"]).exists(), f"the program wrote {d / world['marker']}"
    assert not (world["outside"] / "escape.txt").exists()
    assert not list(ROOT.glob("escape-*")), "the program wrote into the repository"
    if held.get("mountns"):
        assert not Path("/tmp", world["marker"] + "-2").exists()
    if held.get("netns"):
        with pytest.raises(BlockingIOError):
            world["listener"].accept()  # nobody connected to the parent's localhost port
    assert elapsed < BOUND_S, f"took {elapsed:.1f}s"
    if run is not None:
        assert not _sandbox_uid_processes(run.layers.get("uid")), "processes of the run were left running"


@pytest.mark.parametrize("use_bwrap", MODES)
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_is_contained(attack, use_bwrap, world):
    _require(attack, use_bwrap)
    body, gold = ATTACKS[attack]
    code = _program(body, world, os.getpid())
    t0 = time.monotonic()
    verdict, run = grade_code_run(
        f"```python\n{code}\n```",
        gold,
        per_test_timeout=PER_TEST,
        problem_timeout=PROBLEM,
        memory_bytes=MEMORY,
        use_bwrap=use_bwrap,
    )
    elapsed = time.monotonic() - t0
    assert verdict.correct is False, verdict
    _assert_contained(world, run, elapsed)
    # The grader survived and still grades.
    ok = grade_code("```python\na, b = map(int, input().split())\nprint(a + b)\n```", SUM, use_bwrap=use_bwrap)
    assert ok.correct, ok


@pytest.mark.parametrize("use_bwrap", MODES)
@pytest.mark.parametrize("attack", sorted(CALL_ATTACKS))
def test_call_attack_is_wrong(attack, use_bwrap, world):
    t0 = time.monotonic()
    verdict, run = grade_code_run(
        textwrap.dedent(CALL_ATTACKS[attack]),
        CALL,
        per_test_timeout=PER_TEST,
        problem_timeout=PROBLEM,
        memory_bytes=MEMORY,
        use_bwrap=use_bwrap,
    )
    assert verdict.correct is False, verdict
    _assert_contained(world, run, time.monotonic() - t0)


@pytest.mark.parametrize("use_bwrap", MODES)
def test_attack_harness_is_not_vacuous(use_bwrap, world):
    """The attack programs pass once their condition is true: a wrong verdict means containment."""
    # The same prologue and reading code, with the attack's condition replaced by True.
    code = _program(
        """
        if True:
            print(a + b)
    """,
        world,
        os.getpid(),
    )
    verdict = grade_code(code, SUM, per_test_timeout=PER_TEST, problem_timeout=PROBLEM, use_bwrap=use_bwrap)
    assert verdict.correct, verdict


@pytest.mark.parametrize("use_bwrap", MODES)
def test_reported_layers_match_describe_layers(use_bwrap):
    _, run = grade_code_run("print(sum(map(int, input().split())))", SUM, use_bwrap=use_bwrap)
    assert run.outcome == "completed" and run.bwrap is use_bwrap
    layers = {name: active for name, active, _ in describe_layers()}
    dropped = run.layers["uid"] not in (0, os.getuid())
    assert layers["throw-away uid"] is dropped
    if dropped:
        assert 1_800_000_000 <= run.layers["uid"] < 2_000_000_000
    if use_bwrap:
        assert run.layers["netns"] is True and run.layers["mountns"] is True
    elif not bwrap_status()[0]:  # plain is what this machine uses: doctor reports its namespaces
        assert layers["network namespace"] is run.layers["netns"]
        assert layers["mount namespace"] is run.layers["mountns"]


def test_describe_layers_matches_the_machine():
    layers = {name: (active, note) for name, active, note in describe_layers()}
    assert layers["bubblewrap"][0] is bwrap_status()[0]
    held = probe(bwrap_status()[0]).layers  # the mode grading uses here
    dropped = held["uid"] not in (0, os.getuid())
    assert layers["throw-away uid"][0] is dropped
    if IS_ROOT and not dropped:
        assert "failed" in layers["throw-away uid"][1] and "runs as root" in layers["throw-away uid"][1]
    for name in ("separate process", "allow-listed environment", "rlimits", "new session + group kill"):
        assert layers[name][0] is True
    if not MODES:  # neither root nor bubblewrap: the suite above cannot run, the user is warned
        assert "warning" in layers
    if not bwrap_status()[0]:
        assert "warning" in layers and "bubblewrap" in layers["warning"][1]
    assert all(isinstance(note, str) and note for _, note in layers.values())


@pytest.mark.parametrize("use_bwrap", MODES)
def test_no_privilege_is_left_to_the_code(use_bwrap):
    """No capabilities, no_new_privs (a setuid binary cannot give root back), not root."""
    from trinity.grading.sandbox import Limits, run_in_sandbox

    code = "print(''.join(l for l in open('/proc/self/status') if l.startswith(('Uid', 'CapEff', 'NoNewPrivs'))))"
    seen = []
    run = run_in_sandbox(
        {"mode": "stdin", "code": code, "inputs": [""], "fn_name": None},
        Limits(),
        lambda k, status, error, out: seen.append(out.decode()) or True,
        use_bwrap=use_bwrap,
    )
    assert run.outcome == "completed", run
    fields = dict(line.split(":", 1) for line in seen[0].strip().splitlines())
    assert int(fields["CapEff"], 16) == 0 and fields["NoNewPrivs"].strip() == "1"
    assert set(fields["Uid"].split()) == {str(run.layers["uid"])}
    if IS_ROOT and probe(use_bwrap).layers.get("uid_error") is None:
        assert run.layers["uid"] != 0
