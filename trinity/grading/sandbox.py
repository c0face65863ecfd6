"""Run untrusted code in a throw-away child process (docs/CONTRACTS.md, Grading).

The process that holds keys and the ledger never runs candidate code. Each problem gets:

- a fresh `python -I -S` child running `_harness.py` (never reused across problems), with an
  allow-listed environment (no keys, no user HOME) and its own empty dir as cwd/HOME/TMPDIR;
- a new session, and on any per-test / whole-problem deadline a SIGKILL of its process group;
- rlimits: CPU seconds, address space, file size (= the output cap), open files, no core dumps,
  processes;
- as root: a throw-away uid (so RLIMIT_NPROC binds and the code cannot signal or read our
  processes/files), no_new_privs, and a kill of every process left with that uid afterwards;
  without bubblewrap also its own network and mount namespaces (fresh /tmp, /dev/shm, …);
- where bubblewrap works: pid/net/ipc/uts namespaces, `--die-with-parent --new-session`, no
  capabilities, a cleared environment, read-only /usr and interpreter, private tmpfs /tmp and
  /sandbox. As root the user namespace is left out (so the harness can drop to the throw-away
  uid, which a root-only user namespace cannot map); unprivileged it is `--unshare-all`.

After a run nothing of it is left: the parent waits for the process group, bubblewrap's pid
namespace (a pidfd on its pid 1) and, as root, every process of the throw-away uid to be gone.

`describe_layers()` says which of these hold on this machine — from a real probe run, so a
layer the machine refuses (no CAP_SETUID, no CAP_SYS_ADMIN, no bwrap) is reported as off, with
what that leaves open (`trinity doctor` prints it).
"""

from __future__ import annotations

import functools
import importlib
import json
import marshal
import os
import re
import secrets
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trinity.errors import InputError, TrinityError
from trinity.grading import _harness

HARNESS = Path(__file__).with_name("_harness.py")
SANDBOX_DIR = "/sandbox"  # the work dir's path inside bubblewrap
UID_BASE, UID_SPAN = 1_800_000_000, 200_000_000  # throw-away uids: far above any real account


class SandboxError(TrinityError):
    """The sandbox itself could not be started (no interpreter, no bwrap binary …)."""


@dataclass(frozen=True)
class Limits:
    """How much one problem may use. Deadlines are wall-clock, enforced by the parent."""

    per_test_timeout: float = 6.0
    problem_timeout: float = 60.0
    memory_bytes: int = 2 << 30
    output_bytes: int = 16 << 20  # per test; also the largest file the code may write
    open_files: int = 64
    processes: int = 64  # tasks (threads count) the code may add

    def __post_init__(self):
        if not (self.per_test_timeout > 0 and self.problem_timeout > 0):
            raise InputError(f"sandbox timeouts must be > 0, got {self.per_test_timeout}, {self.problem_timeout}")
        if min(self.memory_bytes, self.output_bytes, self.open_files, self.processes) <= 0:
            raise InputError("sandbox limits (memory, output, open files, processes) must be > 0")


@dataclass
class SandboxRun:
    """What happened. `outcome`: completed | stopped (the callback said stop) | timeout |
    exited (the child ended before reporting every test) | fatal (the code cannot run) |
    protocol (a message without the nonce or over the cap)."""

    outcome: str
    test: int | None = None  # the test that was running when it ended early
    detail: str = ""
    layers: dict = field(default_factory=dict)  # what the child reported as held (uid, netns…)
    bwrap: bool = False
    startup_s: float = 0.0  # spawn → "ready"
    compute_s: float = 0.0  # time the child spent running the code, summed over finished tests
    wall_s: float = 0.0


# ---------------------------------------------------------------- what this machine can do


def _is_root() -> bool:
    return os.geteuid() == 0


def _hidden_from_others(path: str) -> bool:
    """True when some dir on the way to `path` does not let other users through."""
    while path not in ("/", ""):
        if not os.stat(path).st_mode & 0o001:
            return True
        path = os.path.dirname(path)
    return False


def _interpreter() -> str:
    """The base interpreter (a venv's python would need its venv bound in too)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _ro_binds(paths: set[str]) -> list[str]:
    """Read-only binds for `paths` (nested ones dropped); their parents are created 0755
    (bwrap would make them 0700, which the throw-away uid cannot enter)."""
    args: list[str] = []
    made: set[str] = set()
    bound: list[str] = []
    for path in sorted(paths, key=len):
        if any(path == b or path.startswith(b + "/") for b in bound):
            continue
        parts = Path(path).parts
        for i in range(2, len(parts)):
            parent = str(Path(*parts[:i]))
            if parent not in made:
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        args += ["--ro-bind", path, path]
        bound.append(path)
    return args


def _bwrap_argv(workdir_size: int, result_fd: int, status_fd: int | None = None) -> list[str]:
    exe = shutil.which("bwrap")
    if exe is None:
        raise SandboxError("bwrap is not installed: apt-get install bubblewrap, or grade without it")
    if _is_root():  # no user namespace: the harness must be able to setuid to a throw-away uid
        ns = [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
        ]
    else:
        ns = ["--unshare-all", "--cap-drop", "ALL"]
    args = [
        exe,
        *ns,
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "HOME",
        SANDBOX_DIR,
        "--setenv",
        "TMPDIR",
        SANDBOX_DIR,
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    python_dirs = {
        os.path.realpath(d) for d in (sys.base_prefix, sys.base_exec_prefix, os.path.dirname(_interpreter()))
    }
    args += _ro_binds({d for d in python_dirs if not (d == "/usr" or d.startswith("/usr/"))})
    args += [
        "--ro-bind",
        str(HARNESS),
        "/harness/_harness.py",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(64 << 20),
        "--tmpfs",
        "/tmp",
        "--size",
        str(workdir_size),
        "--perms",
        "1777",
        "--tmpfs",
        SANDBOX_DIR,
        "--chdir",
        SANDBOX_DIR,
    ]
    if status_fd is not None:  # bwrap writes {"child-pid": N}: the sandbox's pid 1, seen from here
        args += ["--json-status-fd", str(status_fd)]
    args += ["--", _interpreter(), "-I", "-S", "/harness/_harness.py", str(result_fd)]
    return args


@functools.cache
def probe(use_bwrap: bool) -> SandboxRun | str:
    """Run one trivial job in that mode: the SandboxRun (its `layers` say what the child could
    set up on this machine), or why it failed. Cached per process."""
    try:
        run = _run(_probe_job(), Limits(per_test_timeout=10, problem_timeout=10), None, use_bwrap)
    except SandboxError as e:
        return str(e)
    return run if run.outcome == "completed" else f"{run.outcome}: {run.detail}"


@functools.cache
def bwrap_status() -> tuple[bool, str]:
    """(usable, why): runs the real bubblewrap sandbox once with a trivial job."""
    if shutil.which("bwrap") is None:
        return False, "bwrap not installed (apt-get install bubblewrap)"
    result = probe(True)
    if isinstance(result, str):
        return False, f"bwrap is installed but does not work here ({result})"
    return True, "works"


@functools.cache
def prelude_map() -> dict[str, tuple[str, str | None]]:
    """name -> (module, attribute or None for the module itself) that LiveCodeBench's import
    prelude (`_harness.PRELUDE`) binds last; builtins are left to the builtins."""
    bound: dict[str, tuple[str, str | None]] = {}
    for line in _harness.PRELUDE.splitlines():
        words = line.replace(",", " ").split()
        if words[:1] == ["from"]:  # from M import *
            module = importlib.import_module(words[1])
            exported = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
            for name in exported:
                if words[1] == "builtins":
                    bound.pop(name, None)
                else:
                    bound[name] = (words[1], name)
        elif words[:1] == ["import"]:
            for name in words[1:]:
                bound[name] = (name, None)
    return bound


def _probe_job() -> dict:
    return {"mode": "stdin", "code": "print(input())", "inputs": ["ok"], "fn_name": None}


def describe_layers() -> list[tuple[str, bool, str]]:
    """(layer, active on this machine, note) for `trinity doctor`, from a real probe run."""
    root = _is_root()
    bw, why = bwrap_status()
    result = probe(bw)
    if isinstance(result, str):
        return [("separate process", False, f"the code sandbox cannot start here ({result}): code cannot be graded")]
    held = result.layers
    layers = [
        ("separate process", True, "candidate code runs only in a fresh `python -I -S` child, one per problem"),
        ("allow-listed environment", True, "PATH, LANG, HOME/TMPDIR = the sandbox dir; no API keys, no user HOME"),
        ("private work dir", True, "an empty dir as cwd/HOME/TMPDIR, deleted afterwards"),
        ("new session + group kill", True, "per-test and whole-problem wall-clock deadlines SIGKILL the process group"),
        ("rlimits", True, "CPU seconds, address space, file size (output cap), open files, no core dumps"),
        ("results on a private pipe", True, "nonce-tagged; outputs compared in the parent; a missing result is a fail"),
    ]
    dropped = held.get("uid") not in (None, os.getuid())
    if dropped:
        layers.append(
            (
                "throw-away uid",
                True,
                "runs as an unused uid with no capabilities and no_new_privs: "
                "RLIMIT_NPROC binds (fork bombs stop), cannot signal or read our processes or "
                "root-only files; every process left with that uid is killed afterwards",
            )
        )
    elif root:
        layers.append(
            (
                "throw-away uid",
                False,
                "root, but switching to an unused uid failed "
                f"({held.get('uid_error')}): the code runs as root; RLIMIT_NPROC does not bind "
                "(only the wall-clock kill stops a fork bomb)",
            )
        )
    else:
        layers.append(
            (
                "throw-away uid",
                False,
                "not root: the code runs as your uid; RLIMIT_NPROC is set to your current task count + the limit",
            )
        )
    if bw:
        mode = "pid/net/ipc/uts namespaces, no user namespace (root)" if root else "--unshare-all"
        layers.append(
            (
                "bubblewrap",
                True,
                f"{mode}, --die-with-parent --new-session --clearenv, no capabilities, "
                "read-only /usr and interpreter, private tmpfs /tmp and /sandbox; nothing else visible",
            )
        )
        return layers
    layers.append(("bubblewrap", False, why))
    if root:
        layers.append(
            (
                "network namespace",
                bool(held.get("netns")),
                "own empty network namespace (no localhost)"
                if held.get("netns")
                else "could not unshare the network (no CAP_SYS_ADMIN?): the code has your network",
            )
        )
        layers.append(
            (
                "mount namespace",
                bool(held.get("mountns")),
                "fresh tmpfs on /tmp, /var/tmp, /dev/shm, /run/lock"
                if held.get("mountns")
                else "could not unshare mounts: the code can write world-writable dirs such as /tmp",
            )
        )
        layers.append(
            (
                "read-only mounts",
                bool(held.get("readonly")),
                "every mount read-only except the work dir and those tmpfs: no world-writable dir "
                "elsewhere takes a file"
                if held.get("readonly")
                else "could not remount read-only: the code can write any world-writable dir outside the tmp dirs",
            )
        )
        if held.get("stdlib") == "preloaded" and dropped:
            layers.append(
                (
                    "standard library",
                    False,
                    f"{sys.base_prefix} is not readable by other users: the code "
                    "can import only the stdlib modules it names, preloaded before the uid drop",
                )
            )
        layers.append(
            (
                "warning",
                False,
                "root without bubblewrap: the code can read world-readable files, see "
                "other processes in /proc, connect to Unix sockets on the filesystem, fill the disk through "
                "its work dir (per-file cap only), and processes it leaves behind outlive a killed grader; "
                "install bubblewrap",
            )
        )
    else:
        layers.append(
            (
                "warning",
                False,
                "no bubblewrap and not root: the code runs as your user with your "
                "network; it can read your files and signal your processes; install bubblewrap",
            )
        )
    return layers


# ---------------------------------------------------------------- running one job


def run_in_sandbox(
    job: dict,
    limits: Limits,
    on_result: Callable[[int, str, str | None, bytes], bool] | None,
    *,
    use_bwrap: bool | None = None,
) -> SandboxRun:
    """Run one problem's tests in a fresh sandboxed child.

    job: {"mode": "stdin"|"call"|"check", "code": str, "inputs": [str] (stdin) or [[arg, …]] (call)
    or [test code, prompt] (check: HumanEval's `check(candidate)`, one test), "fn_name": str|None}.
    `on_result(test, status, error, payload)` is called in the parent for
    each finished test (payload: the raw stdout, or the JSON of the return value) and returns
    False to stop the problem (the child is killed at once). `use_bwrap`: None = when usable.
    """
    if not sys.platform.startswith("linux"):
        raise TrinityError(
            f"the code sandbox needs Linux (rlimits, /proc, namespaces); this is {sys.platform}: "
            "grade code on a Linux machine"
        )
    if (
        job.get("mode") not in ("stdin", "call", "check")
        or not isinstance(job.get("code"), str)
        or not isinstance(job.get("inputs"), list)
        or (job["mode"] != "stdin" and not job.get("fn_name"))
        or (job["mode"] == "check" and (len(job["inputs"]) != 2 or not all(isinstance(x, str) for x in job["inputs"])))
    ):
        raise InputError(
            'sandbox job must be {"mode": "stdin"|"call"|"check", "code": str, "inputs": [...], '
            '"fn_name": str (call, check)}; check: inputs = [test code, prompt]'
        )
    if use_bwrap is None:
        use_bwrap = bwrap_status()[0]
    return _run(job, limits, on_result, use_bwrap)


def _env(workdir: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir}


def _run(job: dict, limits: Limits, on_result, use_bwrap: bool) -> SandboxRun:
    nonce = secrets.token_hex(16)
    drop_uid = UID_BASE + secrets.randbelow(UID_SPAN) if _is_root() else None
    n_tests = 1 if job["mode"] == "check" else len(job["inputs"])  # check: one test, check(candidate)
    full = {
        **job,
        "nonce": nonce,
        "drop_uid": drop_uid,
        "in_bwrap": use_bwrap,
        "prelude": prelude_map(),
        "parent_pid": os.getpid(),
        "limits": {
            "cpu_s": max(1, int(limits.problem_timeout) + 1),
            "memory_bytes": limits.memory_bytes,
            "output_bytes": limits.output_bytes,
            "open_files": limits.open_files,
            "processes": limits.processes,
        },
    }
    payload = marshal.dumps(full)  # the child is this same interpreter; nothing to import there
    read_fd, write_fd = os.pipe()
    status_r, status_w = os.pipe() if use_bwrap else (None, None)
    workdir = None
    argv: list[str] = []
    t0 = time.monotonic()
    try:
        if use_bwrap:
            input_bytes = sum(len(x.encode()) for x in job["inputs"]) if job["mode"] == "stdin" else 0
            argv = _bwrap_argv(input_bytes + 2 * limits.output_bytes + (16 << 20), write_fd, status_w)
            cwd, env = None, {}
        else:
            # The work dir sits in a 0700 dir of ours, so "../x" from it goes nowhere (the
            # harness hands the work dir itself to the throw-away uid).
            workdir = tempfile.mkdtemp(prefix="trinity-sandbox-")
            cwd = os.path.join(workdir, "work")
            os.mkdir(cwd, 0o700)
            argv = [_interpreter(), "-I", "-S", str(HARNESS), str(write_fd)]
            env = _env(cwd)
        # stderr: bubblewrap's and the harness's start-up errors; the harness points it at
        # /dev/null before the code runs (a chatty program must not block on a full pipe).
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            pass_fds=tuple(fd for fd in (write_fd, status_w) if fd is not None),
            start_new_session=True,
        )
    except BaseException as e:
        for fd in (read_fd, write_fd, status_r, status_w):
            if fd is not None:
                os.close(fd)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        if isinstance(e, OSError):
            raise SandboxError(
                f"cannot start the code sandbox ({argv[0] if argv else 'bwrap'}): "
                f"{e.strerror or e}; check the Python install and `trinity doctor`"
            ) from None
        raise
    os.close(write_fd)
    if status_w is not None:
        os.close(status_w)
    stderr = proc.stderr
    assert stderr is not None  # Popen(stderr=PIPE) above
    feeder = threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True)
    feeder.start()
    run = SandboxRun(outcome="exited", bwrap=use_bwrap)
    try:
        _pump(proc, read_fd, nonce, n_tests, limits, on_result, run, t0)
    finally:
        if run.outcome == "completed":  # let it exit by itself: bubblewrap then tears its pid
            try:  # namespace down before we go on
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
        namespace = _sandbox_init(status_r) if status_r is not None else None
        _kill(proc, drop_uid)
        if namespace is not None:  # its processes are gone once the namespace's pid 1 is
            _wait_readable(namespace, 5.0)
            os.close(namespace)
        if status_r is not None:
            os.close(status_r)
        if not run.layers and run.outcome in ("exited", "protocol"):  # it died starting up: say why
            err = _drain(stderr.fileno()).decode("utf-8", "replace").strip().splitlines()
            if err:
                run.detail = f"{run.detail}: {err[-1][:300]}" if run.detail else err[-1][:300]
        stderr.close()
        os.close(read_fd)
        feeder.join(timeout=1.0)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        run.wall_s = time.monotonic() - t0
    return run


def _sandbox_init(status_fd: int) -> int | None:
    """A pidfd for bubblewrap's pid 1 in the sandbox. The kernel kills and waits for every other
    process of a pid namespace before its pid 1 is gone, so this turns readable only then."""
    m = re.search(rb'"child-pid":\s*(\d+)', _drain(status_fd))
    if not m:
        return None
    try:
        return os.pidfd_open(int(m.group(1)))
    except OSError:  # already gone
        return None


def _feed(pipe, payload: bytes) -> None:
    try:
        pipe.write(payload)
        pipe.close()
    except OSError:  # the child died before reading its job: the parent reports it
        pass


def _wait_readable(fd: int, timeout_s: float) -> bool:
    """poll(), not select(): select() fails on descriptors >= 1024, which a process with
    hundreds of open HTTP connections (live training, the practice server) easily has."""
    p = select.poll()
    p.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(p.poll(max(0.0, timeout_s) * 1000))


def _pump(proc, fd: int, nonce: str, n_tests: int, limits: Limits, on_result, run: SandboxRun, t0: float) -> None:
    """Read messages until every test has reported, a deadline passes, or the child is gone."""
    problem_deadline = t0 + limits.problem_timeout
    test_deadline = problem_deadline
    current: int | None = None
    reported = 0
    buf = bytearray()
    cap = limits.output_bytes + 4096
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    eof = False
    try:
        while True:
            # Parse every complete message in the buffer.
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > 4096:
                        run.outcome, run.test, run.detail = "protocol", _at(current, reported), "header too long"
                        return
                    break
                try:
                    head = json.loads(buf[:nl])
                    size = int(head["len"])
                except (ValueError, KeyError, TypeError):
                    run.outcome, run.test, run.detail = "protocol", _at(current, reported), "unreadable message"
                    return
                if head.get("nonce") != nonce or not 0 <= size <= cap:
                    run.outcome, run.test = "protocol", _at(current, reported)
                    run.detail = "message without the run's nonce or over the cap"
                    return
                if len(buf) < nl + 1 + size:
                    break
                body = bytes(buf[nl + 1 : nl + 1 + size])
                del buf[: nl + 1 + size]
                event = head.get("event")
                now = time.monotonic()
                if event == "ready":
                    run.startup_s = now - t0
                    run.layers = {
                        k: head.get(k) for k in ("uid", "netns", "mountns", "readonly", "stdlib", "uid_error")
                    }
                elif event == "start":
                    current = head.get("test")
                    test_deadline = min(problem_deadline, now + limits.per_test_timeout)
                elif event == "done":
                    k = head.get("test")
                    if k != reported:
                        run.outcome, run.test = "protocol", _at(current, reported)
                        run.detail = f"result for test {k} out of order"
                        return
                    reported += 1
                    secs = head.get("secs")
                    run.compute_s += float(secs) if isinstance(secs, (int, float)) else 0.0
                    current, test_deadline = None, problem_deadline
                    go_on = on_result(k, head.get("status", "error"), head.get("error"), body) if on_result else True
                    if not go_on:
                        run.outcome, run.test = "stopped", k
                        return
                    if reported == n_tests:  # every test judged: whatever the child does next is moot
                        run.outcome = "completed"
                        return
                elif event == "fatal":
                    run.outcome, run.detail = "fatal", str(head.get("error"))[:300]
                    return
                elif event == "end":
                    if reported == n_tests:
                        run.outcome = "completed"
                    else:
                        run.outcome, run.test = "exited", reported
                    return
            if eof:
                run.outcome, run.test = "exited", (current if current is not None else reported)
                run.detail = _exit_detail(proc)
                return
            now = time.monotonic()
            deadline = min(test_deadline, problem_deadline)
            if now >= deadline:
                run.outcome, run.test = "timeout", (current if current is not None else reported)
                run.detail = "whole-problem timeout" if deadline >= problem_deadline else "per-test timeout"
                return
            events = sel.select(timeout=min(deadline - now, 0.05))
            if events:
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    buf += chunk
                else:
                    eof = True
            elif proc.poll() is not None:
                # The harness is gone; a forked grandchild may still hold the pipe open.
                more = _drain(fd)
                buf += more
                eof = True
    finally:
        sel.close()


def _at(current: int | None, reported: int) -> int:
    """The test a run ended in: the one running, else the next one due."""
    return current if current is not None else reported


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    out = bytearray()
    try:
        while chunk := os.read(fd, 1 << 20):
            out += chunk
    except BlockingIOError:
        pass
    return bytes(out)


def _exit_detail(proc) -> str:
    try:
        rc = proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        return "the child closed its result pipe"
    if rc < 0:
        return f"the child was killed by {_signal_name(-rc)}"
    if 128 < rc < 128 + 65:  # bubblewrap passes a killed child on as 128 + signal
        return f"the child was killed by {_signal_name(rc - 128)}"
    return f"the child exited with status {rc}"


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _kill(proc: subprocess.Popen, drop_uid: int | None) -> None:
    """SIGKILL the child's process group, then every process left with the throw-away uid."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # cannot happen for SIGKILL short of a hung kernel
        pass
    # Until the group's other members are gone too. A member that is already a zombie is dead:
    # it stays in the group until whoever inherited it reaps it, and a container's init may
    # reap only every second or two, so only members still running are waited for.
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            break
        if not _group_running(proc.pid):
            break
        time.sleep(0.002)
    if proc.stdin:
        try:
            proc.stdin.close()
        except OSError:
            pass
    if drop_uid is not None:
        _kill_uid(drop_uid)


def _proc_files(name: str, size: int) -> Iterator[tuple[int, bytes]]:
    """(pid, the first `size` bytes of /proc/PID/`name`) of every process still there."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/{name}", "rb") as f:
                yield int(entry), f.read(size)
        except OSError:
            continue


def _group_running(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running (a zombie is not)."""
    for _, stat in _proc_files("stat", 512):
        # "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses
        fields = stat.rpartition(b")")[2].split(None, 3)
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _live_pids(uid: int) -> set[int]:
    """Processes (not zombies) whose real uid is `uid`. /proc/PID's owner is no guide: a
    process that is not dumpable (every one that changed uid) shows as root there."""
    found = set()
    for pid, status in _proc_files("status", 2048):
        state = status.partition(b"\nState:")[2].split(None, 1)[:1]
        uids = status.partition(b"\nUid:")[2].split(None, 1)[:1]
        if uids and int(uids[0]) == uid and state and state[0] not in (b"Z", b"X"):
            found.add(pid)
    return found


def _kill_uid(uid: int, wait_s: float = 5.0) -> None:
    """Kill everything running as `uid` (processes that left the group with setsid, too) and
    wait until it is gone (a process freeing a lot of memory takes a while).

    A child that takes the uid can signal exactly that uid's processes, so kill(-1) from it
    reaches them all and nothing else; it is sent again whenever a new process shows up (a fork
    bomb may fork while we kill).
    """
    killed: set[int] = set()
    deadline = time.monotonic() + wait_s
    while (live := _live_pids(uid)) and time.monotonic() < deadline:
        if live - killed:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the forked child
                try:
                    os.setresgid(uid, uid, uid)
                    os.setresuid(uid, uid, uid)
                    os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            killed |= live
        time.sleep(0.002)
