"""Child side of the code sandbox: runs one problem's tests and reports on a private pipe.

Started by `trinity.grading.sandbox` as `python -I -S _harness.py RESULT_FD`, with the job (one
dict, marshalled: the grader runs this same interpreter) on stdin. It imports nothing from
trinity (it runs as a plain script, inside bubblewrap where only the interpreter is visible) and
trusts nothing once candidate code runs.

Why the results travel on RESULT_FD and not stdout: the candidate owns stdout (and may close it,
flood it, or exit early). Every message carries the run's nonce; the parent compares outputs
itself (the child never sees an expected output), and a test with no message counts as failed,
so neither `sys.exit(0)`, a closed stdout nor a killed parent can turn into a pass.

Messages: one JSON header line `{"nonce", "event", ...,"len": n}` followed by n payload bytes.
  ready  {uid, netns, mountns, stdlib} after confinement, before any candidate code runs
  start  {test}                       test = index, or -1 while the module body is loaded
  done   {test, status, error, secs}  status ok | error; payload = stdout (stdin tests), the
                                      JSON of the return value (call tests), or `true` (check)

Modes: stdin (run the program once per input), call (call `fn_name` per argument list), check
(HumanEval, inputs = [test code, prompt]: load the prompt — trusted, from the dataset — with the
builtins as they were before any candidate code ran, then the program, then run the test code —
`def check(candidate)` — in the prompt's namespace (its helpers, not the program's). The program
runs in a forked child without the result pipe; `check` calls it over a pipe with literal
arguments and gets literal plain data back (numbers, strings, containers of them), so an object
whose `__eq__` always says True fails and no stack walk reaches the reporter).
  fatal  {error}                      the code cannot run at all (syntax error, no function)
  end    {}                           all tests were run
"""

import builtins
import marshal
import os
import signal
import sys

# LiveCodeBench prepends these imports to every solution; solutions rely on them (List, deque…).
PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "import json\nfrom builtins import *\nfrom typing import *\n"
    "import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, "
    "itertools, functools, operator, io, sys, json\n"
)

# Without bubblewrap, as root, the interpreter may live under a dir the throw-away uid cannot
# enter (/root/.pyenv): then the stdlib modules the code names are imported before the uid
# drop (never these, which act on import: open a browser, a window, print).
NEVER_PRELOAD = frozenset(
    {
        "antigravity",
        "this",
        "idlelib",
        "tkinter",
        "turtle",
        "turtledemo",
        "webbrowser",
        "pydoc",
        "pdb",
        "__hello__",
        "__phello__",
    }
)

_write = os.write
_clock = __import__("time").perf_counter
# Headers are JSON, written without the json module: importing it (and re with it) would cost
# start-up time on every problem that does not need it.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


def _json_scalar(v) -> str:
    if v is None or isinstance(v, bool):
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).translate(_ESCAPES) + '"'


class Reporter:
    def __init__(self, fd: int, nonce: str):
        self.fd, self.nonce = fd, nonce

    def send(self, event: str, payload: bytes = b"", **fields) -> None:
        fields = {"nonce": self.nonce, "event": event, "len": len(payload), **fields}
        head = "{" + ",".join(f"{_json_scalar(k)}:{_json_scalar(v)}" for k, v in fields.items()) + "}"
        data = memoryview(head.encode("utf-8", "backslashreplace") + b"\n" + payload)
        while data:
            data = data[_write(self.fd, data) :]


def _libc():
    import ctypes  # lazy: the sandbox child loads a module only where its mode needs it

    return ctypes.CDLL(None, use_errno=True)


_TMP_DIRS = (b"/tmp", b"/var/tmp", b"/dev/shm", b"/run/lock")
# mount(2) flags, and the mountinfo options that map to them (kept when remounting read-only)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    8,
    32,
    4096,
    0x4000,
    1 << 18,
)
_KEEP = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024, "nodiratime": 2048}


def _private_mounts(libc, size: int) -> tuple[bool, bool]:
    """Plain mode as root: own mount namespace, fresh tmpfs on the world-writable tmp dirs, and
    every other mount read-only except the work dir (cwd) — a 0777 directory anywhere else is
    not writable. (mount namespace held, read-only held)."""
    CLONE_NEWNS = 0x00020000
    if libc.unshare(CLONE_NEWNS) != 0:
        return False, False
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False, False
    # the work dir becomes its own mount (left writable below) and our cwd, before a tmpfs may
    # cover the directory it lives in (/tmp)
    work = os.getcwd().encode()
    bound = libc.mount(work, work, None, MS_BIND, None) == 0
    if bound:
        os.chdir(work)
    opts = f"size={size},mode=1777".encode()
    ok = True
    for path in _TMP_DIRS:
        if os.path.isdir(path):
            ok = libc.mount(b"tmpfs", path, b"tmpfs", MS_NOSUID | MS_NODEV, opts) == 0 and ok
    if not bound:
        return ok, False
    writable = {work, *_TMP_DIRS}
    ro = True
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            rows = [line.split() for line in f]
    except OSError:
        return ok, False
    for row in rows:
        # id parent major:minor root MOUNT-POINT options ... ; escapes: \040 for a space
        point = row[4].replace(b"\\040", b" ").replace(b"\\011", b"\t").replace(b"\\012", b"\n")
        point = point.replace(b"\\134", b"\\")
        if point in writable or point.startswith(b"/proc/") or point == b"/proc":
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for opt in row[5].split(b","):
            flags |= _KEEP.get(opt.decode("ascii", "replace"), 0)
        if libc.mount(None, point, None, flags, None) != 0 and point == b"/":
            ro = False
    return ok, ro


def _count_tasks(uid: int) -> int:
    """Threads owned by `uid` right now (RLIMIT_NPROC counts threads of the real uid)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 0").split()[0]) == uid:
            n += int(fields.get("Threads", "1"))
    return n


def _hidden_from_others(path: str) -> bool:
    while path not in ("/", ""):
        if not os.stat(path).st_mode & 0o001:
            return True
        path = os.path.dirname(path)
    return False


def _set_limits(job: dict) -> None:
    import resource  # lazy: the sandbox child loads a module only where its mode needs it

    lim = job["limits"]
    cpu = int(lim["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["memory_bytes"], lim["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["output_bytes"], lim["output_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"], lim["open_files"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Deep recursion through C (lru_cache, recursive __eq__) overflows an 8 MB stack where
    # judges give far more; the main thread's stack may grow to this (it counts in RLIMIT_AS).
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    want = 256 << 20 if hard == resource.RLIM_INFINITY else min(hard, 256 << 20)
    resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-long write fails (EFBIG), not a kill


def _drop(job: dict, names: set) -> dict:
    """As root: own net/mount namespaces (without bubblewrap), then a throw-away uid, and the
    process limit. Returns what held."""
    import resource  # lazy: the sandbox child loads a module only where its mode needs it

    nproc = job["limits"]["processes"]
    held = {
        "uid": os.getuid(),
        "netns": job["in_bwrap"],
        "mountns": job["in_bwrap"],
        "readonly": job["in_bwrap"],
        "stdlib": "readable",
    }
    uid = job.get("drop_uid")
    if uid is not None and os.geteuid() == 0:
        if not job["in_bwrap"]:
            libc = _libc()
            if _hidden_from_others(os.path.dirname(os.__file__)):
                for name in sorted(names):  # "heapq", "collections.abc", "xml.etree.ElementTree" …
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names and top not in NEVER_PRELOAD:
                        try:
                            __import__(name)
                        except BaseException:
                            pass
                held["stdlib"] = "preloaded"
            held["netns"] = libc.unshare(0x40000000) == 0  # CLONE_NEWNET: no usable network
            held["mountns"], held["readonly"] = _private_mounts(libc, job["limits"]["output_bytes"] * 4)
            libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS (bubblewrap sets it itself)
        try:
            if not job["in_bwrap"]:
                os.chown(".", uid, uid)  # (inside bubblewrap the work dir is a 1777 tmpfs)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)  # from root to non-root: every capability is gone
        except OSError as e:  # no CAP_SETUID (a restricted container): stay, and say so
            held["uid_error"] = _short(e)
        held["uid"] = os.getuid()
    if uid is not None and held["uid"] == uid:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    else:
        own = _count_tasks(os.getuid())  # the limit counts all of this user's tasks
        resource.setrlimit(resource.RLIMIT_NPROC, (own + nproc, own + nproc))
        if not job["in_bwrap"] and uid is None:
            _libc().prctl(38, 1, 0, 0, 0)
    if not job["in_bwrap"]:
        # Die with the grader (bubblewrap has --die-with-parent). Set after the uid change,
        # which clears it; if the grader is already gone, stop here.
        _libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != job["parent_pid"]:
            os._exit(1)
    return held


def _names(code) -> set:
    """Every name the code (and the functions and classes in it) looks up or imports."""
    out = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            out |= _names(const)
    return out


def _prelude(names: set, prelude_map: dict) -> dict:
    """The globals LiveCodeBench's import prelude would give, for the names the code uses:
    importing only those modules keeps start-up short. Code that can look names up at run time
    (eval, exec, globals …) gets the whole prelude."""
    base: dict = {"__builtins__": builtins}
    if names & {"eval", "exec", "globals", "vars", "locals", "__import__", "__dict__"}:
        exec(PRELUDE, base)
        return base
    for name in names:
        source = prelude_map.get(name)
        if source:
            module = __import__(source[0])
            base[name] = module if source[1] is None else getattr(module, source[1])
    return base


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 200 else text[:197] + "..."


def _flush_all(*streams) -> str | None:
    """Flush our stdout and whatever the candidate put in its place; the first failure wins."""
    err = None
    for s in streams:
        if getattr(s, "closed", False):  # closed by the program: close() already flushed it
            continue
        try:
            s.flush()
        except BaseException as e:  # closed, EFBIG past the output cap, a broken replacement
            err = err or _short(e)
    return err


def _join_program_threads() -> None:
    """A program ends when its non-daemon threads do (as at interpreter exit): solutions run
    `main` in a thread with a bigger stack (`threading.stack_size(...)`)."""
    threading = sys.modules.get("threading")
    if threading is None:  # the program started no thread
        return
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            try:
                t.join()
            except BaseException:
                pass


def _fresh_stdio() -> None:
    # typeshed marks sys.__stdin__/__stdout__ Final; this child rebinds them on purpose so that
    # code reaching for the "original" streams gets the fresh ones too.
    sys.stdin = sys.__stdin__ = open(0, "r", encoding="utf-8", errors="replace", closefd=False)  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)  # type: ignore[misc]


def _redirect(fd: int, path: str, flags: int) -> None:
    new = os.open(path, flags, 0o644)
    os.dup2(new, fd)
    os.close(new)


def _run_stdin(code, base: dict, n_tests: int, rep: Reporter, cap: int) -> None:
    for k in range(n_tests):
        _redirect(0, f"in{k}", os.O_RDONLY)
        _redirect(1, f"out{k}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _fresh_stdio()
        ours = sys.stdout
        ns = dict(base, __name__="__main__", stdin=sys.stdin, stdout=sys.stdout)
        status, error = "ok", None
        rep.send("start", test=k)
        t0 = _clock()
        try:
            exec(code, ns)
        except SystemExit as e:  # a program may end itself; only a non-zero status is an error
            if e.code not in (None, 0):
                status, error = "error", f"exit status {e.code!r}"
        except BaseException as e:
            status, error = "error", _short(e)
        _join_program_threads()
        flush_error = _flush_all(ours, sys.stdout)
        secs = _clock() - t0
        if status == "ok" and flush_error:
            status, error = "error", flush_error
        try:
            with open(f"out{k}", "rb") as f:
                out = f.read(cap + 1)
            os.unlink(f"out{k}")
        except OSError as e:
            out, status, error = b"", "error", _short(e)
        rep.send("done", out, test=k, status=status, error=error, secs=secs)


def _run_call(code, base: dict, fn_name: str, args_list: list, rep: Reporter) -> None:
    from json import dumps  # lazy: imported before the uid drop (main), so this is a lookup

    _redirect(1, os.devnull, os.O_WRONLY)
    _fresh_stdio()
    ns = dict(base, __name__="solution", stdin=sys.stdin, stdout=sys.stdout)
    rep.send("start", test=-1)
    try:
        exec(code, ns)
    except BaseException as e:
        rep.send("fatal", error="the module body raised " + _short(e))
        return
    solution = ns.get("Solution")
    if isinstance(solution, type) and callable(getattr(solution, fn_name, None)):

        def target(*args):
            return getattr(solution(), fn_name)(*args)  # a fresh instance per test
    elif callable(ns.get(fn_name)):
        target = ns[fn_name]
    else:
        rep.send("fatal", error=f"no class Solution with method {fn_name!r} and no function {fn_name!r}")
        return
    for k, args in enumerate(args_list):
        rep.send("start", test=k)
        t0 = _clock()
        try:
            payload = dumps(target(*args), allow_nan=False).encode()
            rep.send("done", payload, test=k, status="ok", error=None, secs=_clock() - t0)
        except BaseException as e:  # SystemExit included: a function must return
            rep.send("done", test=k, status="error", error=_short(e), secs=_clock() - t0)


_INF = float("inf")


def _lit(v, depth: int = 0) -> str:
    """A Python literal of plain data (exact builtin types) that `ast.literal_eval` reads back;
    TypeError for anything else (an object whose `__eq__` always says True cannot cross)."""
    t = type(v)
    if depth > 100:
        raise TypeError("returned data nested over 100 deep")
    if t is float:
        if v != v:
            raise ValueError("returned NaN")
        return "1e999" if v == _INF else "-1e999" if v == -_INF else repr(v)
    if t in (bool, int, str, bytes, type(None), complex):
        return repr(v)
    if t is list:
        return "[" + ",".join(_lit(x, depth + 1) for x in v) + "]"
    if t is tuple:
        return "(" + "".join(_lit(x, depth + 1) + "," for x in v) + ")"
    if t in (set, frozenset):
        return "{" + ",".join(_lit(x, depth + 1) for x in v) + "}" if v else "set()"
    if t is dict:
        return "{" + ",".join(_lit(k, depth + 1) + ":" + _lit(x, depth + 1) for k, x in v.items()) + "}"
    raise TypeError(f"returned a {t.__name__}, not plain data")


def _send_msg(fd: int, text: str) -> None:
    data = memoryview(text.encode("utf-8", "surrogatepass"))
    data = memoryview(len(data).to_bytes(8, "big") + bytes(data))
    while data:
        data = data[_write(fd, data) :]


def _recv_msg(fd: int, cap: int) -> str | None:
    """One message, or None at EOF, a short read or one over `cap` bytes."""

    def exactly(n: int) -> bytes | None:
        parts, got = [], 0
        while got < n:
            b = os.read(fd, min(n - got, 1 << 20))
            if not b:
                return None
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    head = exactly(8)
    if head is None:
        return None
    n = int.from_bytes(head, "big")
    if n > cap:
        return None
    body = exactly(n)
    return None if body is None else body.decode("utf-8", "surrogatepass")


def _serve_candidate(code, base: dict, fn_name: str, req: int, resp: int, literal_eval, cap: int) -> None:
    """The candidate's process: load the program, then answer calls (literal arguments in,
    a literal value or an error out). It holds neither the result pipe nor the test code."""
    ns = dict(base, __name__="__main__", stdin=sys.stdin, stdout=sys.stdout)
    try:
        exec(code, ns)
    except BaseException as e:
        _send_msg(resp, "Fthe module body raised " + _short(e))
        return
    target = ns.get(fn_name)
    if not callable(target):
        _send_msg(resp, f"Fno function {fn_name!r}")
        return
    _send_msg(resp, "L")
    while True:
        msg = _recv_msg(req, cap)
        if msg is None:
            return
        try:
            args, kwargs = literal_eval(msg)
            out = "R" + _lit(target(*args, **kwargs))
        except BaseException as e:  # SystemExit included: a function must return
            out = "E" + _short(e)
        _send_msg(resp, out)


def _run_check(
    code,
    base: dict,
    fn_name: str,
    test_src: str,
    prompt_src: str,
    pristine: dict,
    rep: Reporter,
    result_fd: int,
    cap: int,
) -> None:
    """HumanEval: `check(candidate)` runs in THIS process; the candidate's program runs in a
    forked child that has no result pipe, cannot trace or read this process (not dumpable), and
    sees only literal arguments. Its answers come back as literals, so nothing it does — walking
    the stack, patching the reporter — can reach the verdict."""
    import ast  # lazy: imported before the uid drop (main), so this is a lookup

    _redirect(1, os.devnull, os.O_WRONLY)
    _fresh_stdio()
    try:
        test = compile(test_src, "<test>", "exec")
    except BaseException as e:
        rep.send("fatal", error="the test code does not compile: " + _short(e))
        return
    # The problem's own prompt first, before any candidate code: its helpers (encode_cyclic,
    # poly …) are the ones the test code sees, whatever the candidate redefines.
    tns: dict[str, object] = {"__builtins__": dict(pristine), "__name__": "__test__"}
    try:
        exec(compile(prompt_src, "<prompt>", "exec"), tns)
    except BaseException as e:
        rep.send("fatal", error="the problem's prompt does not load: " + _short(e))
        return
    libc = _libc()
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc/PID/{fd,mem} for the same uid
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    rep.send("start", test=-1)
    pid = os.fork()
    if pid == 0:  # the candidate's process
        try:
            os.close(result_fd)
            os.close(req_w)
            os.close(resp_r)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with the checker
            _serve_candidate(code, base, fn_name, req_r, resp_w, ast.literal_eval, cap)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(resp_w)
    try:
        first = _recv_msg(resp_r, cap)
        if first is None or first[:1] != "L":
            rep.send("fatal", error=first[1:] if first else "the program ended while it was loaded")
            return

        def candidate(*args, **kwargs):
            _send_msg(req_w, _lit((args, kwargs)))
            reply = _recv_msg(resp_r, cap)
            if reply is None:
                raise RuntimeError("the program's process ended")
            if reply[:1] == "E":
                raise RuntimeError(reply[1:])
            if reply[:1] != "R":
                raise RuntimeError("the program's process sent a malformed answer")
            return ast.literal_eval(reply[1:])

        tns[fn_name] = candidate  # a test may call the function by its name (HumanEval/33 does)
        rep.send("start", test=0)
        t0 = _clock()
        try:
            exec(test, tns)
            check = tns.get("check")
            if not callable(check):
                raise NameError("the test code defines no check(candidate)")
            check(candidate)
            rep.send("done", b"true", test=0, status="ok", error=None, secs=_clock() - t0)
        except BaseException as e:  # AssertionError: a failed test; SystemExit: the code quit
            rep.send("done", test=0, status="error", error=_short(e) or "AssertionError", secs=_clock() - t0)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass


def main() -> None:
    result_fd = int(sys.argv[1])
    os.set_inheritable(result_fd, False)  # exec'd grandchildren do not get the result pipe
    job = marshal.loads(sys.stdin.buffer.read())  # from the grader, which runs this same interpreter
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    rep = Reporter(result_fd, job["nonce"])
    if job["mode"] == "stdin":  # written before the file-size limit and while we own the dir
        for k, text in enumerate(job["inputs"]):
            with open(f"in{k}", "w", encoding="utf-8", errors="replace") as f:
                f.write(text)
    _set_limits(job)
    try:
        code = compile(job["code"], "<solution>", "exec")
    except BaseException as e:
        rep.send("ready", uid=os.getuid())
        rep.send("fatal", error=_short(e))
        os._exit(0)
    names = _names(code)
    for name in ("exit", "quit"):  # site.py adds these; `-S` skips site, programs still call them
        builtins.__dict__.setdefault(name, sys.exit)
    base = _prelude(names, job["prelude"])  # while the interpreter's files are still readable
    pristine = dict(builtins.__dict__)  # before any candidate code can touch the builtins
    if job["mode"] == "check":  # the test's own imports (math, random …), while readable
        try:
            test_names = _names(compile(job["inputs"][0], "<test>", "exec"))
        except BaseException:  # reported as fatal once the run starts
            test_names = set()
        for name in sorted(test_names):
            if name in sys.stdlib_module_names and name not in NEVER_PRELOAD:
                try:
                    __import__(name)
                except BaseException:
                    pass
    if job["mode"] == "call":
        import json  # noqa: F401  (lazy: for the results; after the drop it might not be importable)
    if job["mode"] == "check":
        import ast  # noqa: F401  (lazy: the checker reads the candidate's answers as literals)
        import ctypes  # noqa: F401  (lazy: _libc, after the drop)
    sys.setrecursionlimit(50000)
    held = _drop(job, names)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the grader reads stderr only for start-up errors
    rep.send("ready", **held)
    if job["mode"] == "stdin":
        _run_stdin(code, base, len(job["inputs"]), rep, job["limits"]["output_bytes"])
    elif job["mode"] == "check":
        cap = job["limits"]["output_bytes"]
        _run_check(code, base, job["fn_name"], job["inputs"][0], job["inputs"][1], pristine, rep, result_fd, cap)
    else:
        _run_call(code, base, job["fn_name"], job["inputs"], rep)
    rep.send("end")
    os._exit(0)  # no atexit handlers or finalisers of the candidate's


if __name__ == "__main__":
    main()
